"""Batched matrix multiplication: C[b] = A[b] @ B[b] for A of shape (batch, m, k) and B of shape (batch, k, n)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.bmm of two 3-D tensors."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


batch_size = 32
m = 1024
k = 2048
n = 1536

SMALL_SIZES = {"batch_size": 8, "m": 128, "k": 256, "n": 128}
ALT_SIZES = {"batch_size": 3, "m": 37, "k": 111, "n": 53}


def get_inputs():
    A = torch.randn(batch_size, m, k)
    B = torch.randn(batch_size, k, n)
    return [A, B]


def get_init_inputs():
    return []
