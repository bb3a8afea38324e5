"""Pattern 11, fallback in an exception handler -- task: norm_softmax.

The kernel keeps a row in a fixed 8192-float stack buffer and refuses longer rows; the benchmark's rows
are 16384 wide, so every timed call raises and falls back to torch.softmax. The alternate shape (4999
columns) does run the kernel, so "the kernel works at another size" too. Caught statically (a try/except
whose handler calls PyTorch: fallback) and by the profiler (reference_ops).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            return _ext.softmax_smallrow(x.contiguous())
        except RuntimeError:
            return torch.softmax(x, dim=-1)
