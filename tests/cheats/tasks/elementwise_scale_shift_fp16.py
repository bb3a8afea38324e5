"""fp16 elementwise affine map y = x * scale + shift, for honest candidates that compute in half precision.

A test-only task (not part of the bundled suite): the suite has no fp16 task, and an honest candidate
reading and writing fp16 must not be mistaken for a precision downgrade (cheat pattern 14).
"""

import torch
import torch.nn as nn

ROWS = 4096
COLS = 8192
SCALE = 1.75
SHIFT = -0.5

SMALL_SIZES = {"ROWS": 512, "COLS": 2048}
ALT_SIZES = {"ROWS": 37, "COLS": 1001}


class Model(nn.Module):
    def __init__(self, scale: float, shift: float):
        super().__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale + self.shift


def get_inputs():
    return [torch.randn(ROWS, COLS, dtype=torch.float16)]


def get_init_inputs():
    return [SCALE, SHIFT]
