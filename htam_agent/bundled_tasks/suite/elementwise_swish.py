"""Swish / SiLU activation: y = x * sigmoid(x), elementwise on a 2-D tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies x * sigmoid(x) to every element."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)


batch_size = 8192
dim = 65536

SMALL_SIZES = {"batch_size": 256, "dim": 4096}
ALT_SIZES = {"batch_size": 37, "dim": 3333}


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
