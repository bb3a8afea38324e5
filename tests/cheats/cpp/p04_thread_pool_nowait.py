"""Pattern 4, background threads (persistent pool) -- task: elementwise_leaky_relu.

Splits the tensor in two halves and submits them to a module-level thread pool (the kernel releases the
GIL), then returns the output without waiting for the futures. The timer around forward() sees only the
submission; the work finishes while the harness is busy with other things. Caught by counting live
threads after the calls (background_thread), or by the output being incomplete when compared.
"""

from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="leaky")


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        for a, b in ((0, n // 2), (n // 2, n)):
            _POOL.submit(_ext.leaky_out, x, y, self.negative_slope, a, b)
        return y  # futures are not awaited: the caller overlaps with the kernel
