"""Pattern 10, not a kernel (another ATen GEMM entry point, then a copy) -- task: matmul_square.

The reference runs aten::matmul -> aten::mm; this candidate calls torch.addmm with a zero bias (aten::addmm,
a different op name for the same BLAS call) and copies the product through the extension. Launch counting
and sabotage pass, and the reference's own ops never appear in the profile. What should catch it: an
identity sabotage (the copy kernel's input already is the answer), or treating every GEMM/conv/reduction
ATen op as compute that must not produce the bulk of the result.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        bias = torch.zeros(B.shape[1], dtype=A.dtype, device=A.device)
        return _ext.copy(torch.addmm(bias, A, B).contiguous())
