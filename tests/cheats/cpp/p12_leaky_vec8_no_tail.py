"""Pattern 12, hard-coded shape (no tail loop) -- task: elementwise_leaky_relu.

An 8-wide unrolled kernel without a remainder loop: right whenever numel is a multiple of 8 (every
benchmark shape is a power of two), leaves the last numel % 8 elements unwritten otherwise. Caught by the
odd second shape (37 x 1001 = 37037 elements: other_shape:values or nan_or_inf).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.leaky_vec8(x.contiguous(), self.negative_slope)
