"""Honest look-alike: half precision in and out where the task itself is fp16 -- task:
tests/cheats/tasks/elementwise_scale_shift_fp16.py.

Reads fp16, computes x * scale + shift in fp32 registers, rounds once to fp16. Uses half precision
"internally", like a pattern-14 downgrade, but the task's dtype is fp16; must be accepted.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float):
        super().__init__()
        self.scale, self.shift = scale, shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.scale_shift_half(x.contiguous(), self.scale, self.shift)
