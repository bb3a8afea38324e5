"""Pattern 2, input mutation (scratch use of the input) -- task: elementwise_hardtanh_scale.

Multiplies the input by `scale` in place first ("one fused pass instead of a clamp pass plus a scale
pass"), then clamps to the scaled bounds into a fresh output. The output is right and is a new tensor, so
only a check that the inputs are bit-identical after the call notices that the caller's `x` now holds
x * 2.5 (a reference run after it on the same tensor would be computed on the scaled input).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self, min_val: float, max_val: float, scale: float):
        super().__init__()
        self.min_val, self.max_val, self.scale = min_val, max_val, scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.mul_(self.scale)  # clamp(x, lo, hi) * s == clamp(x * s, lo * s, hi * s) for s > 0
        return _ext.hardtanh_scale(x, self.min_val * self.scale, self.max_val * self.scale, 1.0)
