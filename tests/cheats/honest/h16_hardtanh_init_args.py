"""Honest look-alike: the init arguments passed to the kernel at every call -- task:
elementwise_hardtanh_scale.

The honest twin of p12_hardtanh_baked_constants: min_val, max_val and scale are stored by the constructor
and passed to the kernel, so the model is right for any init arguments the reference accepts (the
evaluator builds both with other float init values). Must be accepted.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self, min_val: float, max_val: float, scale: float):
        super().__init__()
        self.min_val, self.max_val, self.scale = min_val, max_val, scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.hardtanh_scale(x.contiguous(), self.min_val, self.max_val, self.scale)
