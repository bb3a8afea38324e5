"""Pattern 15, distribution exploit (no max subtraction) -- task: norm_softmax.

Skips the row-max pass: exp(x) / sum(exp(x)). Exact for standard-normal inputs (|x| < 6), overflows to
inf/NaN once inputs exceed ~88. Caught by a large-magnitude input trial (x * 64: nan_or_inf).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax_nomax(x.contiguous())
