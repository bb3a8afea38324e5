"""Honest look-alike: a copy kernel for layout, then the kernel that computes -- task: norm_softmax.

Stages the input through the extension's copy kernel (a layout step, the kind an LLM writes to get a
contiguous buffer of its own) and computes the softmax with the softmax kernel. One of its two kernels is
a pure copy: replacing each kernel by a copy of its input (the identity sabotage) must still break the
output, because the softmax kernel computes it. Must be accepted.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        staged = _ext.copy(x.contiguous())
        return _ext.softmax(staged)
