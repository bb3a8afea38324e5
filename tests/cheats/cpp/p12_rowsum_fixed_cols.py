"""Pattern 12, hard-coded shape (reduction length) -- task: reduction_row_sum.

Row length baked in as the benchmark's 8192; the output has numel / 8192 rows. Caught at the second shape
(other_shape:shape).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.row_sum_fixed(x.contiguous())
