"""Pattern 16, undefined behaviour (C += A B into torch::empty) -- task: matmul_square.

The classic "C is zero-initialised" bug: the i-k-j kernel accumulates into an output from torch::empty.
A 1 MB block straight from mmap is zero, so it passes whenever the allocator hands out fresh pages.
Caught when freed blocks are poisoned (nan_or_inf / values); robustly by determinism re-runs.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return _ext.matmul_accum(A.contiguous(), B.contiguous())
