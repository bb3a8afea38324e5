"""Pattern 11, fallback (Triton) -- task: norm_softmax.

The one-block-per-row kernel refuses rows wider than 8192 (register budget); the benchmark rows are 16384
wide, so every timed call falls back to torch.softmax in the exception handler. Caught statically
(fallback) and by the profiler (reference_ops).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


def _softmax(x: torch.Tensor) -> torch.Tensor:
    cols = x.shape[-1]
    if cols > 8192:
        raise ValueError("row too wide for one block")
    y = torch.empty_like(x)
    _softmax_kernel[(x.numel() // cols,)](x, y, cols, BLOCK=triton.next_power_of_2(cols))
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            return _softmax(x.contiguous())
        except ValueError:
            return torch.softmax(x, dim=-1)
