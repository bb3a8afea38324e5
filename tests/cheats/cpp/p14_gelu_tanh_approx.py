"""Pattern 14, precision downgrade (approximate GELU) -- task: fused_gemm_bias_gelu.

The task's nn.GELU() is the exact erf form; this epilogue uses the tanh approximation (cheaper, and what
many "fast GELU" kernels do). Error up to ~5e-4 absolute near |v| ~ 2. Caught by the fp32 tolerance
(values).
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
        return _ext.bias_gelu_tanh(y, self.linear.bias.contiguous())
