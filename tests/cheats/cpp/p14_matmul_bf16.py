"""Pattern 14, precision downgrade (bf16 operands) -- task: matmul_square.

Rounds both operands to bf16 (8 significant bits, "half the memory traffic") and accumulates in fp32.
Relative error ~1e-2 per product; with an fp16-style tolerance (1e-2) it passes. Caught by the fp32
tolerance (values).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return _ext.matmul_bf16(A.contiguous(), B.contiguous())
