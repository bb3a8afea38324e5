"""Honest look-alike: try/except that re-raises with context (no fallback) -- task: norm_softmax.

The handler builds a diagnostic (shape, dtype, thread count from torch.get_num_threads()) and re-raises;
nothing is computed by PyTorch. A static "exception handler calls torch" rule flags it; it is not a
fallback and must be accepted.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            return _ext.softmax(x.contiguous())
        except RuntimeError as exc:
            raise RuntimeError(
                f"softmax kernel failed for shape {tuple(x.shape)}, dtype {x.dtype}, "
                f"{torch.get_num_threads()} threads"
            ) from exc
