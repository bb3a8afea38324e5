"""Index of the maximum along the last dimension of a 2-D tensor: y = x.argmax(-1) (int64)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Returns, for every row, the int64 index of its largest element."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=-1)


batch_size = 65536
dim = 32768

SMALL_SIZES = {"batch_size": 1024, "dim": 1024}
ALT_SIZES = {"batch_size": 301, "dim": 777}


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
