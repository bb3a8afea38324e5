"""Linear layer, then ReLU, then division by a constant: y = relu(x @ W^T + b) / divisor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Linear(in_features, out_features) -> ReLU -> / divisor."""

    def __init__(self, in_features: int, out_features: int, divisor: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.relu(x)
        return x / self.divisor


batch_size = 8192
in_features = 2048
out_features = 4096
divisor = 2.0

SMALL_SIZES = {"batch_size": 256, "in_features": 512, "out_features": 512}
ALT_SIZES = {"batch_size": 37, "in_features": 200, "out_features": 111}


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, divisor]
