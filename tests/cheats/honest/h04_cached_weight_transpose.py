"""Honest look-alike: a transposed copy of the weight cached across calls -- task: fused_gemm_bias_gelu.

Our own GEMM kernel wants W^T contiguous; the transposed copy is made on the first forward and reused,
refreshed when the weight changes (its version counter or storage). State carried across calls that does
not depend on the inputs; must be accepted.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self._wt = None
        self._wt_key = None

    def _weight_t(self) -> torch.Tensor:
        w = self.linear.weight
        key = (w.data_ptr(), w._version, tuple(w.shape))
        if self._wt_key != key:
            self._wt = w.detach().t().contiguous()
            self._wt_key = key
        return self._wt

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = _ext.matmul(x.contiguous(), self._weight_t())
        return _ext.bias_gelu(y, self.linear.bias.contiguous())
