"""Pattern 2, input mutation (input used as scratch) -- task: norm_softmax.

Subtracts each row's max from the input in place ("saves allocating a shifted copy"), then runs the
no-max softmax kernel on it. Numerically this is a stable, correct softmax returned in a fresh tensor; the
caller's input is silently destroyed. Caught only by comparing the inputs with a pristine copy after the
call (input_mutation).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.sub_(x.amax(dim=-1, keepdim=True))  # stabilise in place
        return _ext.softmax_nomax(x)
