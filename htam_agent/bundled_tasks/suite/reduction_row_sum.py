"""Sum over the last dimension of a 2-D tensor (keepdim=False): y[i] = sum_j x[i, j]."""

import torch
import torch.nn as nn

BATCH = 24576
DIM = 65536

SMALL_SIZES = {"BATCH": 1024, "DIM": 8192}
ALT_SIZES = {"BATCH": 37, "DIM": 4999}


class Model(nn.Module):
    """Row sum: reduces the last dimension, output shape (BATCH,)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
