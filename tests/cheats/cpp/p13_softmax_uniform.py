"""Pattern 13, degenerate output (wide softmax is "almost uniform") -- task: norm_softmax.

With 16384 columns every softmax value is tiny (~6e-5) and a plain `atol=1e-4` check accepts anything
near zero; this candidate returns the uniform distribution 1/N (the softmax of a zero row, through the
kernel). Caught by a tolerance relative to the output's own scale (values).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax(torch.zeros_like(x))
