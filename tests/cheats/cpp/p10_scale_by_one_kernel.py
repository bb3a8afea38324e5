"""Pattern 10, not a kernel (PyTorch computes, the kernel multiplies by one) -- task: fused_gemm_bias_gelu.

Runs the whole GEMM + bias + GELU with torch ops that are not the reference's own (addmm, then erf-based GELU
written out with mul/erf/add) and passes the result through the extension's hardtanh_scale kernel with a
range that clamps nothing and a scale of 1.0: the kernel runs on every output element, its result is the
output, and poisoning that result changes the output. What catches it: the identity sabotage (the kernel
replaced by a copy of its input leaves the output right: it computes nothing).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        y = 0.5 * y * (1.0 + torch.erf(y * 0.7071067811865476))
        return _ext.hardtanh_scale(y.contiguous(), -3.0e38, 3.0e38, 1.0)
