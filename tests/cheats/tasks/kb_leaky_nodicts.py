"""LeakyReLU written the way KernelBench writes its problems: no size dicts, `super(Model, self).__init__()`,
`torch.rand` inputs, a power-of-two GPU size.

A test-only task in KernelBench's format (our own file): the second shape that catches hard-coded shapes
(cheat pattern 12) must exist here too, derived from `batch_size` and `dim`.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies LeakyReLU with a given negative slope."""

    def __init__(self, negative_slope: float = 0.01):
        super(Model, self).__init__()  # noqa: UP008 (KernelBench's own style, on purpose)
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 4096
dim = 393216


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
