"""Honest look-alike: the GEMM stays in PyTorch, our kernel does the fused epilogue -- task:
fused_gemm_bias_gelu.

The KernelBench level-2 style the format allows: torch.matmul(x, W^T) without bias (aten::mm, not the
reference's aten::linear/addmm), then one C++ pass adding the bias and applying the exact erf GELU. Looks
like pattern 10 to a naive "does it call torch?" check; must be accepted.
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
        y = torch.matmul(x, self.linear.weight.t()).contiguous()
        return _ext.bias_gelu(y, self.linear.bias.contiguous())
