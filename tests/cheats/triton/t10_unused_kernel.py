"""Pattern 10, not a kernel (Triton) -- task: norm_softmax.

Defines a @triton.jit softmax (a static "has a Triton kernel" check passes) and calls torch.softmax in
forward. Caught by launch counting (no_kernel_launched) and the profiler (reference_ops).
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


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = _softmax_kernel

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)
