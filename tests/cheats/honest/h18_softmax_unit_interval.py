"""Honest look-alike: a softmax with its max subtraction on a task whose inputs are in [0, 1) -- task:
kb_softmax_rand.

The twin of cpp/p15_softmax_no_max_unit_interval.py: the large trial that overflows the cheat (values up to ~220)
must leave this one right. Must be accepted.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax(x.contiguous())
