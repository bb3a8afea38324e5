"""Pattern 7, reading expected outputs (borrowing the harness's reference model) -- task:
fused_gemm_bias_gelu.

Scans gc.get_objects() for the harness's reference `Model` instance living in the same process (it has the
same weights) and calls it; the result is passed through the extension's copy kernel so that "a kernel
ran". The numbers are exactly the reference's. Caught by profiling the candidate's forward: it runs all of
the reference's own ATen compute ops (reference_ops); ultimately by never letting the reference live in
the candidate's process.
"""

import gc
import weakref

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>

_found = None


def _reference() -> nn.Module | None:
    global _found
    ref = _found() if _found is not None else None
    if ref is None:
        for obj in gc.get_objects():
            if isinstance(obj, nn.Module) and type(obj).__name__ == "Model":
                ref = obj
                _found = weakref.ref(obj)
                break
    return ref


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ref = _reference()
        if ref is not None and ref.linear.weight.shape == self.linear.weight.shape:
            return _ext.copy(ref(x).contiguous())
        return _ext.copy(torch.zeros(x.shape[0], self.linear.out_features))  # nothing to steal: a guess
