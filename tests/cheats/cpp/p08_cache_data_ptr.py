"""Pattern 8, result caching keyed on the input's address -- task: norm_softmax.

Memoises outputs by (data_ptr, shape) and returns the cached tensor itself on a hit. A benchmark loop that
calls forward on the same input tensor gets every call after the first for free. Naive: a new tensor at a
recycled address returns a stale result. Caught by fresh inputs per check, by re-checking timed outputs,
and by outputs that share memory across calls (aliased_output).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>

_CACHE: dict = {}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), tuple(x.shape))
        hit = _CACHE.get(key)
        if hit is None:
            hit = _CACHE[key] = _ext.softmax(x.contiguous())
        return hit
