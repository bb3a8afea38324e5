"""Binary elementwise chain on three tensors of one shape: y = (a + b) * c."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Adds a and b, then multiplies the sum by c, elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return (a + b) * c


rows = 8192
cols = 65536

SMALL_SIZES = {"rows": 512, "cols": 2048}
ALT_SIZES = {"rows": 111, "cols": 1000}


def get_inputs():
    a = torch.randn(rows, cols)
    b = torch.randn(rows, cols)
    c = torch.randn(rows, cols)
    return [a, b, c]


def get_init_inputs():
    return []
