"""Square fp32 matrix multiplication C = A @ B with A, B of shape (N, N)."""

import torch
import torch.nn as nn

N = 4096

SMALL_SIZES = {"N": 512}
ALT_SIZES = {"N": 333}


class Model(nn.Module):
    """Plain fp32 matmul (TF32 off, as PyTorch's default for matmul)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
