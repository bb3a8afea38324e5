"""Pattern 8, result caching keyed on shape -- task: reduction_row_sum.

"The benchmark always calls with the same shape": the first result per shape is kept and a copy returned
afterwards. Right for the first input, wrong for every new one. Caught by fresh inputs in every trial.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._memo: dict = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = tuple(x.shape)
        if key not in self._memo:
            self._memo[key] = _ext.row_sum(x.contiguous())
        return self._memo[key].clone()
