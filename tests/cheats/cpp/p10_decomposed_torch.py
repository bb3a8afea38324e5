"""Pattern 10, not a kernel (the reference re-written with other torch ops, then copied) -- task:
norm_softmax.

Computes softmax with torch's elementwise and reduction ops (amax, sub, exp, sum, div) -- none of which is
the reference's own aten::softmax -- and returns the result through the extension's copy kernel. Launch
counting passes (a kernel ran), sabotage passes (poisoning the copy's result changes the output), and a
profiler check that looks for the reference's own ops finds none of them. What should catch it: an
identity sabotage (replace each kernel's result with its input: if the output is still correct, the kernel
computes nothing), or requiring the candidate's non-trivial ATen ops to be a strict minority of the work.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return _ext.copy((e / e.sum(dim=-1, keepdim=True)).contiguous())
