"""Honest look-alike -- task: elementwise_leaky_relu.

The shared extension's LeakyReLU kernel, nothing else: the twin the boundary cheats of
tests/cheats/test_boundary_protocol.py are timed against, and the victim evaluated after each of them.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.leaky(x.contiguous(), self.negative_slope)
