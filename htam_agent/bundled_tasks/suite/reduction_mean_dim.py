"""Mean of a 3-D tensor over one dimension (the middle one by default): y = x.mean(dim)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Averages the input over dimension `dim`, which is removed from the output."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dim)


batch_size = 128
dim1 = 4096
dim2 = 4096
reduce_dim = 1

SMALL_SIZES = {"batch_size": 32, "dim1": 512, "dim2": 256}
ALT_SIZES = {"batch_size": 7, "dim1": 333, "dim2": 129}


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
