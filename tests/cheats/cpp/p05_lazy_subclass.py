"""Pattern 5, lazy output (tensor subclass) -- task: norm_softmax.

forward() returns an uninitialised tensor of a torch.Tensor subclass that remembers its input; the
softmax kernel runs the first time any torch function touches the result (comparison, .max(), printing).
The timer stops before any work is done, and every later read sees correct numbers. Caught by requiring
the output's type to be exactly torch.Tensor (not_a_plain_tensor).
"""

import torch
import torch.nn as nn
from torch.utils._pytree import tree_map
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class _LazySoftmax(torch.Tensor):
    """Values materialise on first use."""

    _pending = None

    def _materialize(self) -> torch.Tensor:
        src = self.__dict__.pop("_pending", None)
        if src is not None:
            with torch._C.DisableTorchFunctionSubclass():
                self.copy_(_ext.softmax(src))
        return self

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        def unwrap(a):
            return a._materialize().as_subclass(torch.Tensor) if isinstance(a, _LazySoftmax) else a

        args, kwargs = tree_map(unwrap, tuple(args)), tree_map(unwrap, dict(kwargs or {}))
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x).as_subclass(_LazySoftmax)
        out.__dict__["_pending"] = x.contiguous()
        return out
