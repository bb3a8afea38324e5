"""RMSNorm in Triton: one program per row with the whole row in registers (BLOCK = next_power_of_2(cols)),
sum of squares, then x * rsqrt(mean + eps) * weight in the same program."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    ms = tl.sum(x * x, axis=0) / cols
    rinv = 1.0 / tl.sqrt(ms + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * cols + offs, x * rinv * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
        if x.numel() == 0:
            return out
        cols = x.shape[-1]
        rows = x.numel() // cols
        BLOCK = triton.next_power_of_2(cols)
        num_warps = 16 if BLOCK >= 8192 else (8 if BLOCK >= 2048 else 4)
        _rmsnorm_kernel[(rows,)](x, self.weight.contiguous(), out, cols, float(self.eps), BLOCK=BLOCK, num_warps=num_warps)
        return out
