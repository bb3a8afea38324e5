"""RMSNorm over the last dimension of a 2-D tensor: y = x * rsqrt(mean(x^2, -1) + eps) * weight."""

import torch
import torch.nn as nn

BATCH = 32768
DIM = 8192
EPS = 1e-6

SMALL_SIZES = {"BATCH": 512, "DIM": 4096}
ALT_SIZES = {"BATCH": 53, "DIM": 999}


class Model(nn.Module):
    """RMSNorm with a learned per-feature weight, written out in eager PyTorch ops."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms_inv = torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x * rms_inv * self.weight


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [DIM, EPS]
