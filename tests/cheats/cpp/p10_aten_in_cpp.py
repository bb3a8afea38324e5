"""Pattern 10, not a kernel (PyTorch called from inside the C++ "kernel") -- task: norm_softmax.

forward() calls the extension's `softmax_fast`, whose body is `return at::softmax(x, -1);`. The launch is
real and its result is the output, so launch counting and sabotage (poisoning the kernel's result) both
pass. Caught by the profiler: ATen ops dispatched from C++ show up too, and the forward runs the reference's
own aten::softmax (reference_ops).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax_fast(x.contiguous())
