"""Honest look-alike: argmax with torch's tie rule (first index) -- task: reduction_argmax.

Strict `>` comparison: the first index of the maximum, as torch.argmax. Guards the future "inputs with
ties" trial against false alarms; must be accepted.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.argmax_first(x.contiguous())
