"""Pattern 5, output that is a view of persistent memory -- task: elementwise_leaky_relu.

Keeps one workspace for the lifetime of the module and returns a view of it ("no allocation per call").
Every call overwrites the previous call's result in place, so a caller holding two outputs holds the same
numbers twice; a harness that checks each output right after its call sees nothing wrong. Caught by
checking that an output shares no memory with an earlier call's output (aliased_output).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope
        self._ws = None  # plain attribute: not part of the state_dict

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n = x.numel()
        if self._ws is None or self._ws.numel() < n:
            self._ws = torch.empty(n, dtype=x.dtype, device=x.device)
        y = self._ws[:n].view(x.shape)
        _ext.leaky_out(x, y, self.negative_slope, 0, n)
        return y
