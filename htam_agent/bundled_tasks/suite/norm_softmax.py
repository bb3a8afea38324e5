"""Softmax over the last dimension of a 2-D tensor with wide rows (each row is 1 MiB at the GPU size)."""

import torch
import torch.nn as nn

BATCH = 4096
DIM = 262144

SMALL_SIZES = {"BATCH": 256, "DIM": 16384}
ALT_SIZES = {"BATCH": 37, "DIM": 4999}


class Model(nn.Module):
    """Row-wise softmax: y[i, j] = exp(x[i, j] - max_j x[i]) / sum_j exp(x[i, j] - max_j x[i])."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
