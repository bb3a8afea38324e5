"""Honest look-alike: split reduction, kernel does the bulk, torch adds up a few partials -- task:
reduction_row_sum.

Each row is cut into up to 16 equal segments and the kernel sums every segment (all of the input is read
by our kernel); torch.sum then adds the <= 16 partial sums per row, a 16x smaller reduction. The last step
is the reference's own op (aten::sum), on a tiny tensor: the kernel computes the result. Must be accepted.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


def _segments(cols: int) -> int:
    return next(k for k in range(16, 0, -1) if cols % k == 0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape[0], x.shape[-1]
        k = _segments(cols)
        partials = _ext.row_sum(x.view(rows * k, cols // k))  # our kernel reads every element
        return partials.view(rows, k).sum(dim=-1)
