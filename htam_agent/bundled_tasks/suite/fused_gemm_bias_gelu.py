"""nn.Linear (GEMM + bias) followed by exact GELU (erf form, nn.GELU's default approximate='none')."""

import torch
import torch.nn as nn

BATCH = 4096
IN_FEATURES = 4096
OUT_FEATURES = 4096

SMALL_SIZES = {"BATCH": 256, "IN_FEATURES": 1024, "OUT_FEATURES": 1024}
ALT_SIZES = {"BATCH": 37, "IN_FEATURES": 333, "OUT_FEATURES": 1001}


class Model(nn.Module):
    """y = gelu(x @ W^T + b) with the exact GELU: 0.5 * v * (1 + erf(v / sqrt(2)))."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.gelu = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gelu(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
