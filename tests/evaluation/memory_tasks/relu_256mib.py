"""A KernelBench-format ReLU with 256 MiB in and 256 MiB out (8192 x 8192 float): large beside the evaluator's own
processes, small enough for any test machine (tests/evaluation/test_verdict_memory.py)."""

import torch
import torch.nn as nn

batch_size = 8192
dim = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
