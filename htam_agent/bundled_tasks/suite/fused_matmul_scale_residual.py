"""Square linear layer, scaled, plus the input as a residual: y = (x @ W^T + b) * scale + x."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear(features, features) -> * scale -> + x."""

    def __init__(self, features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        y = y * self.scale
        return y + x


batch_size = 4096
features = 4096
scale = 0.5

SMALL_SIZES = {"batch_size": 256, "features": 512}
ALT_SIZES = {"batch_size": 41, "features": 175}


def get_inputs():
    x = torch.randn(batch_size, features)
    return [x]


def get_init_inputs():
    return [features, scale]
