"""Honest look-alike: padded operands, output returned as a slice -- task: matmul_square.

Pads A and B with zeros to a multiple of 64 (F.pad: a PyTorch op), multiplies with our kernel and returns
the top-left N x N slice: a non-contiguous view of a larger fresh tensor. Zero padding is exact. Uses torch
for layout and returns a view; must be accepted.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


def _pad_to(t: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    return F.pad(t, (0, cols - t.shape[1], 0, rows - t.shape[0])).contiguous()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        m, k = A.shape
        n = B.shape[1]
        up = lambda v: (v + 63) // 64 * 64  # noqa: E731
        c = _ext.matmul(_pad_to(A, up(m), up(k)), _pad_to(B, up(k), up(n)))
        return c[:m, :n]
