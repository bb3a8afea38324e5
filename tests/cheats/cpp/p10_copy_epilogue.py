"""Pattern 10, not a kernel (torch does the work, the kernel copies) -- task: matmul_square.

"GEMM in cuBLAS/MKL, our kernel for the epilogue": torch.matmul computes the product and the extension's
copy kernel writes it to the output. The kernel runs and its result is the output, so launch counting and
sabotage pass. Caught by the profiler (the reference's aten::matmul / aten::mm run in the forward:
reference_ops).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return _ext.copy(torch.matmul(A, B).contiguous())
