"""Pattern 6, timer tampering through the statistics the harness uses -- task: elementwise_leaky_relu.

The kernel is honest and every clock is untouched; the candidate replaces `statistics.median` (which the
harness uses to summarise its samples) with 0.6 x the minimum. The reported median drops by roughly half,
well above any roofline floor, so the fake speedup looks plausible. What should catch it: snapshot every
function the timing code calls (statistics, the timer classes), or compute the statistics outside the
candidate's process.

Since the trust boundary the statistics are computed in the checker: the patch changes nothing and this is
an honest kernel, accepted with its true time (tests/cheats/test_trust_boundary.py checks both).
"""

import statistics

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>

statistics.median = lambda data: 0.6 * min(data)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.leaky(x.contiguous(), self.negative_slope)
