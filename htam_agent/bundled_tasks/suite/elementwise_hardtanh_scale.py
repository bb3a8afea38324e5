"""Clamp to [min_val, max_val] (hardtanh), then multiply by a constant scale: y = clamp(x, lo, hi) * scale."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Clamps every element to [min_val, max_val] and multiplies the result by `scale`."""

    def __init__(self, min_val: float, max_val: float, scale: float):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x, min=self.min_val, max=self.max_val) * self.scale


batch_size = 16384
dim = 65536
min_val = -1.5
max_val = 1.0
scale = 2.5

SMALL_SIZES = {"batch_size": 256, "dim": 4096}
ALT_SIZES = {"batch_size": 45, "dim": 5001}


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [min_val, max_val, scale]
