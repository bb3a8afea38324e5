"""Pattern 18, state carried across calls (a stale statistic in a module global) -- task: norm_softmax.

Measures the global maximum of the first input it sees and reuses it as the softmax shift forever ("the
shift only guards against overflow; any upper bound will do"), saving the max pass on every later call.
Results now depend on call history: fine while later inputs look like the first, inf/NaN once they are
larger. Caught by trials with other distributions after the first call (nan_or_inf on large magnitudes).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>

_SHIFT: float | None = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _SHIFT
        x = x.contiguous()
        if _SHIFT is None:
            _SHIFT = float(x.max())
        return _ext.softmax_given_max(x, _SHIFT)
