"""A task whose reference returns a view (`expand`) of a 128 KiB input as a 2^30 x 2^15 float output: 128 TiB as
a fresh tensor, which no process can allocate (tests/evaluation/test_verdict_phases.py). The calibration's no-op
allocates outputs shaped like the reference's, before any candidate code is loaded: its failure is the
evaluator's, never the candidate's."""

import torch
import torch.nn as nn

rows = 1 << 30
dim = 1 << 15


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.expand(rows, dim)


def get_inputs():
    return [torch.rand(1, dim)]


def get_init_inputs():
    return []
