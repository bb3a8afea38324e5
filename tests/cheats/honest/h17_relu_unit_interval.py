"""Honest look-alike: a ReLU kernel on a task whose inputs are in [0, 1) -- task: kb_relu_rand.

On `torch.rand` inputs ReLU is the identity, so a sabotage that replaces the kernel by a copy of its input
leaves the output right there: judged on the task's own inputs, this honest kernel looked unused
(`kernel_not_used`; seen on KernelBench's 19_ReLU on the H200). The sabotage now draws signed normal inputs,
where ReLU is not the identity. Must be accepted.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.leaky(x.contiguous(), 0.0)
