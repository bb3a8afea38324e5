"""Honest look-alike: a persistent thread pool whose work is awaited inside forward -- task:
elementwise_leaky_relu.

Splits the tensor over a module-level ThreadPoolExecutor (the kernel releases the GIL) and waits for every
future before returning: all work is done when forward returns. The pool's idle threads stay alive between
calls, like OpenMP's. Looks like pattern 4; should be accepted (the right test is "work after return",
not "threads exist").
"""

from concurrent.futures import ThreadPoolExecutor, wait

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
        futures = [_POOL.submit(_ext.leaky_out, x, y, self.negative_slope, a, b) for a, b in ((0, n // 2), (n // 2, n))]
        wait(futures)
        for f in futures:
            f.result()  # re-raise a kernel error here
        return y
