"""Pattern 10, not a kernel (the kernel is compiled, never called) -- task: norm_softmax.

Builds a perfectly good C++ softmax at import -- a static check for "has a load_inline kernel" passes --
and forward() calls torch.softmax. Caught by counting launches of the candidate's kernels
(no_kernel_launched) and by profiling the forward for the reference's own ops (reference_ops).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = _ext.softmax

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)
