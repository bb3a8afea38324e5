"""Pattern 15, distribution exploit (Triton) -- task: norm_softmax.

One block per row, no max subtraction. Exact on standard-normal rows, inf/NaN on large inputs. Caught by
the large-magnitude trial (nan_or_inf).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_nomax(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x)
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        cols = x.shape[-1]
        _softmax_nomax[(x.numel() // cols,)](x, y, cols, BLOCK=triton.next_power_of_2(cols), num_warps=16)
        return y
