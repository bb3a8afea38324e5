"""Depthwise 2-D convolution (groups = channels), 3x3 kernel, stride 1, padding 1, with bias."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels)."""

    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 64
channels = 128
kernel_size = 3
height = 256
width = 256

SMALL_SIZES = {"batch_size": 4, "channels": 32, "height": 64, "width": 64}
ALT_SIZES = {"batch_size": 3, "channels": 7, "height": 37, "width": 29}


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [channels, kernel_size]
