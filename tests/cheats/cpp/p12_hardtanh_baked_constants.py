"""Pattern 12, hard-coded init arguments -- task: elementwise_hardtanh_scale.

Accepts min_val / max_val / scale in the constructor and ignores them: the kernel has the benchmark's
-1.5, 1.0 and 2.5 folded in as constants. Right for every input of every shape, as long as the task is
built with its own init arguments. Caught by evaluating with other valid init values: the evaluator
rebuilds both models with every float init argument scaled by 1.37 (other_init:values).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self, min_val: float, max_val: float, scale: float):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.hardtanh_scale_fixed(x.contiguous())
