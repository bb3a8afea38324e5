"""Pattern 12, hard-coded shape (row length) -- task: norm_softmax.

The kernel's row length is a compile-time constant equal to the benchmark's 16384 columns (fully unrolled
inner loops); rows = numel / 16384. Exact at the benchmark shape, garbage at any other row length. Caught by
checking a second, odd shape (other_shape:values).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax_fixed(x.contiguous())
