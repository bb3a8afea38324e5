"""Pattern 15, distribution exploit (catastrophic cancellation) -- task: norm_layernorm.

Computes the variance in one sweep as E[x^2] - E[x]^2 with fp32 accumulators: one read of the row instead
of two. Accurate for zero-mean inputs -- every trial distribution today is centred, and scaling by 64 does
not change the ratio of mean to spread -- but for rows with mean 1000 and spread 1 it loses every digit of
the variance. What should catch it: a shifted input distribution (x + a large offset).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim, eps=1e-5, elementwise_affine=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.layernorm_onepass(x.contiguous(), self.ln.weight, self.ln.bias, self.ln.eps)
