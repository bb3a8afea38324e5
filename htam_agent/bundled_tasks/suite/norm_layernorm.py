"""LayerNorm over the last dimension of a 2-D tensor, with affine weight and bias (nn.LayerNorm, eps=1e-5)."""

import torch
import torch.nn as nn

BATCH = 65536
DIM = 16384

SMALL_SIZES = {"BATCH": 512, "DIM": 4096}
ALT_SIZES = {"BATCH": 37, "DIM": 1333}


class Model(nn.Module):
    """y = (x - mean) / sqrt(var + eps) * weight + bias, statistics over the last dimension (biased variance)."""

    def __init__(self, dim: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim, eps=1e-5, elementwise_affine=True)
        # Non-trivial affine parameters so a kernel that ignores them fails the comparison.
        with torch.no_grad():
            self.ln.weight.copy_(1.0 + 0.1 * torch.randn(dim))
            self.ln.bias.copy_(0.1 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [DIM]
