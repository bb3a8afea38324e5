"""Tall-skinny matrix multiplication: C = A @ B with A of shape (M, K), B of shape (K, N), M >> K, N."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.matmul of a tall matrix by a small square-ish one."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 1048576
K = 256
N = 256

SMALL_SIZES = {"M": 16384, "K": 128, "N": 64}
ALT_SIZES = {"M": 5003, "K": 45, "N": 27}


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
