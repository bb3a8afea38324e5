"""Pattern 10 (boundary class 5: evidence checks detected) -- task: elementwise_leaky_relu.

PyTorch computes every compared output. Its own kernel runs only while the PyTorch profiler is on (the
`reference_ops` check), and a canary launch on two known values in every call spots the NaN and identity
sabotage, after which forward raises. When a raise under sabotage counted as "the kernel is used" and the
profiler was the only per-call evidence, it was accepted with no aten op seen. Now an exception under
sabotage shows nothing (kernel_use_not_shown), and its canary is a launch in every call, so the
per-call launch check alone would not catch it.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


def _profiling() -> bool:
    return bool(torch._C._autograd._profiler_enabled())


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope
        self.probe = torch.tensor([-1.0, 2.0])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        canary = _ext.leaky(self.probe.clone(), self.negative_slope)
        if not torch.equal(canary, torch.tensor([-self.negative_slope, 2.0])):
            raise RuntimeError("numerical check failed")
        if _profiling():
            return _ext.leaky(x.contiguous(), self.negative_slope)
        return F.leaky_relu(x, self.negative_slope)
