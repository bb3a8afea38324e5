"""nn.Conv2d 3x3 (stride 1, no padding), plus a learned per-channel bias parameter, then ReLU."""

import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 256
WIDTH = 256
KERNEL_SIZE = 3

SMALL_SIZES = {"BATCH": 4, "IN_CHANNELS": 16, "OUT_CHANNELS": 32, "HEIGHT": 64, "WIDTH": 64}
ALT_SIZES = {"BATCH": 3, "IN_CHANNELS": 5, "OUT_CHANNELS": 7, "HEIGHT": 37, "WIDTH": 29}


class Model(nn.Module):
    """y = relu(conv2d(x) + bias), where bias has shape (out_channels, 1, 1) and conv2d has its own bias too."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias_shape: tuple):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = x + self.bias
        return torch.relu(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, KERNEL_SIZE, (OUT_CHANNELS, 1, 1)]
