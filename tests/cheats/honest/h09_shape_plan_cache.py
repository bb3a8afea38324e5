"""Honest look-alike: a per-shape plan cached in a module dict -- task: reduction_row_sum.

Caches, per input shape, how to split the rows into blocks (a "plan", not a result), then reduces each
block with the kernel and concatenates. A dict keyed on the shape, like pattern 8, holding no outputs;
must be accepted.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>

_PLANS: dict = {}


def _plan(rows: int, cols: int) -> list:
    key = (rows, cols)
    if key not in _PLANS:
        block = max(1, (1 << 20) // max(cols, 1))  # about 4 MB of input per block
        _PLANS[key] = [(a, min(rows, a + block)) for a in range(0, rows, block)]
    return _PLANS[key]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape[0], x.shape[-1]
        parts = [_ext.row_sum(x[a:b]) for a, b in _plan(rows, cols)]
        return parts[0] if len(parts) == 1 else torch.cat(parts)
