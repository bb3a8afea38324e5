"""Pattern 1, stale output -- task: reduction_row_sum.

The output tensor is allocated before the kernel runs, and the kernel's own result is dropped: `out` is
never written. On a GPU (and for small CPU blocks) the allocator hands back the block the reference's output
just freed, so a harness that runs the reference first and the candidate second, and lets the reference's
output die in between, sees the right numbers for free. Caught by running the candidate before the
reference, keeping the reference's outputs alive and poisoning freed blocks.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)  # result buffer, sized up front
        _ext.row_sum(x)  # the kernel allocates and fills its own tensor, which is discarded
        return out
