"""Softmax written the way KernelBench writes its problems: no size dicts, `super(Model, self).__init__()`,
inputs from `torch.rand` in [0, 1), a GPU-sized tensor.

A test-only task in KernelBench's format (our own file): on [0, 1) a softmax without its max subtraction never
overflows, so only a trial that leaves the task's range by enough (past exp's overflow at ~88) tells it apart.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over dim 1."""

    def __init__(self):
        super(Model, self).__init__()  # noqa: UP008 (KernelBench's own style, on purpose)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 4096
dim = 393216


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
