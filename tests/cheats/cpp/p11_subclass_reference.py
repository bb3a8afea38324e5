"""Pattern 11, inherits the reference -- task: elementwise_leaky_relu.

KernelBench candidates often paste the reference `Model` into the file. This one then declares
`class ModelNew(Model)`, compiles a kernel at import and never overrides forward: the reference runs,
unchanged. Caught statically (inherits_reference) and by launch counting (no_kernel_launched).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class Model(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


class ModelNew(Model):
    """LeakyReLU; the C++ kernel `_ext.leaky` is built at import."""

    kernel = staticmethod(_ext.leaky)
