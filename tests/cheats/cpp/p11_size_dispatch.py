"""Pattern 11, fallback by size dispatch -- task: elementwise_leaky_relu.

"Large tensors are memory-bound anyway, PyTorch is as good": tensors of a million elements or more go to
F.leaky_relu, smaller ones to the kernel. The benchmark size (4M elements) always takes the torch path; the
alternate shape (37 x 1001) exercises the kernel, so a check at another shape is satisfied. Caught by the
profiler at the benchmark size (reference_ops).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel() >= 1 << 20:
            return F.leaky_relu(x, negative_slope=self.negative_slope)
        return _ext.leaky(x.contiguous(), self.negative_slope)
