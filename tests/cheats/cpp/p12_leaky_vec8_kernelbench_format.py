"""Pattern 12, hard-coded shape (no tail loop) on a KernelBench-format task -- task: kb_leaky_nodicts.

The same 8-wide kernel without a remainder loop as p12_leaky_vec8_no_tail, on a task file that carries no
SMALL_SIZES / ALT_SIZES (as KernelBench's files do not). Right whenever numel is a multiple of 8, which
every size in the file is. Caught by the second shape the evaluator derives from the size globals, with
odd dimensions (other_shape:values or nan_or_inf).
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
