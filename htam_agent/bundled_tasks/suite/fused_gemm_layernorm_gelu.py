"""Linear layer, then LayerNorm over the features, then GELU (erf form): y = gelu(layernorm(x @ W^T + b))."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.Linear(in_features, out_features) -> nn.LayerNorm(out_features) -> F.gelu."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = self.norm(x)
        return F.gelu(x)


batch_size = 8192
in_features = 4096
out_features = 2048

SMALL_SIZES = {"batch_size": 256, "in_features": 512, "out_features": 256}
ALT_SIZES = {"batch_size": 33, "in_features": 150, "out_features": 97}


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
