"""Pattern 16, undefined behaviour (accumulating into uninitialised memory) -- task: reduction_row_sum.

Accumulates each row straight into the output allocated with torch::empty, assuming it starts at zero.
Fresh pages from the OS are zero, so a first run on a clean process often passes; a recycled block holds
whatever was there. Caught when freed blocks are poisoned (values / nan_or_inf); robustly by running twice
on the same inputs and requiring bit-identical results.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.row_sum_accum(x.contiguous())
