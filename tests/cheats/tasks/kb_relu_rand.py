"""ReLU written the way KernelBench writes its problems: no size dicts, `super(Model, self).__init__()`, inputs
from `torch.rand` in [0, 1) (where ReLU is the identity), a GPU-sized tensor.

A test-only task in KernelBench's format (our own file): on the CPU backend its small and alt sizes are
derived from `batch_size` and `dim`; honest kernels must not be taken for copies because ReLU is the
identity on the task's own inputs.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies ReLU."""

    def __init__(self):
        super(Model, self).__init__()  # noqa: UP008 (KernelBench's own style, on purpose)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4096
dim = 393216


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
