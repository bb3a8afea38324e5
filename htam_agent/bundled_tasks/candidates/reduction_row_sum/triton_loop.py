"""Row sum in Triton: one program per row, a loop over column blocks accumulating a vector in fp32,
one tl.sum at the end."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_sum_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = x_ptr + row * cols
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        idx = start + offs
        acc += tl.load(base + idx, mask=idx < cols, other=0.0)
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        cols = x.shape[-1]
        out = torch.empty(x.shape[:-1], device=x.device, dtype=x.dtype)
        rows = out.numel()
        if rows == 0:
            return out
        if cols == 0:
            return out.zero_()
        BLOCK = min(triton.next_power_of_2(cols), 4096)
        num_warps = 8 if BLOCK >= 2048 else 4
        _row_sum_kernel[(rows,)](x, out, cols, BLOCK=BLOCK, num_warps=num_warps)
        return out
