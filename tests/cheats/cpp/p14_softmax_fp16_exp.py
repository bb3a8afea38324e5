"""Pattern 14, precision downgrade (exp in fp16) -- task: norm_softmax.

Stores the exponentials at half precision (11 significant bits) before normalising. Error ~5e-4 relative:
passes an fp16 tolerance, and an absolute one for these tiny outputs. Caught by the fp32 relative
tolerance (values).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax_fp16(x.contiguous())
