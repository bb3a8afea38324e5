"""Pattern 12, hard-coded shape (Triton: no mask, grid rounded down) -- task: elementwise_leaky_relu.

Grid = numel // BLOCK and no mask: exact when numel is a multiple of 1024 (every benchmark shape), the
tail left unwritten otherwise. Caught at the odd second shape (other_shape:values / nan_or_inf).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _leaky_kernel(x_ptr, y_ptr, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.where(x > 0, x, x * slope))


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        _leaky_kernel[(x.numel() // 1024,)](x, y, self.negative_slope, BLOCK=1024)
        return y
