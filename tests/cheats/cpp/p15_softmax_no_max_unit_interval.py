"""Pattern 15, distribution exploit (no max subtraction) -- task: kb_softmax_rand (KernelBench's format and
its torch.rand inputs in [0, 1)).

The same kernel as p15_softmax_no_max.py: exp(x) / sum(exp(x)) without the row max. On [0, 1) and on the old
large trial (the inputs times 64, so [0, 64)) exp never overflows and the results are right; the large trial
now scales [0, 1) inputs to a standard deviation of 64 (values up to ~220): inf / inf, `nan_or_inf`.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax_nomax(x.contiguous())
