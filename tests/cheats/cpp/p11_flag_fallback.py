"""Pattern 11, fallback without PyTorch in the handler -- task: norm_softmax.

Same as the try/except fallback, but the handler only records the failure; the torch call happens after
the try block, so a static scan of exception handlers finds nothing. At the benchmark size every call
takes the torch path. Caught by the profiler (the reference's aten::softmax runs in the forward:
reference_ops).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = None
        try:
            out = _ext.softmax_smallrow(x.contiguous())
        except RuntimeError:
            pass  # unsupported row length
        if out is None:
            out = torch.softmax(x, dim=-1)
        return out
