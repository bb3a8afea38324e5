"""Pattern 15, distribution exploit (no ties) -- task: reduction_argmax.

Uses `>=` in the running comparison, so on ties it returns the LAST index of the maximum; torch.argmax
returns the first. Continuous random inputs never tie, so every trial passes. What should catch it: an
input distribution with ties (e.g. rounded or small-integer-valued floats) for arg-reductions.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.argmax_last(x.contiguous())
