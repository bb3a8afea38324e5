"""LeakyReLU on a large 2-D tensor: y = x if x >= 0 else negative_slope * x (memory-bound elementwise)."""

import torch
import torch.nn as nn

BATCH = 4096
DIM = 262144
NEGATIVE_SLOPE = 0.01

SMALL_SIZES = {"BATCH": 1024, "DIM": 4096}
ALT_SIZES = {"BATCH": 37, "DIM": 1001}


class Model(nn.Module):
    """Applies LeakyReLU with a fixed negative slope."""

    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [NEGATIVE_SLOPE]
