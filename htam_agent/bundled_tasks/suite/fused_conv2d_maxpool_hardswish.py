"""3x3 convolution (padding 1), then 2x2 max pooling, then hardswish: y = hardswish(maxpool2d(conv2d(x)))."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2) -> nn.MaxPool2d(pool_size)
    -> F.hardswish."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, pool_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.pool = nn.MaxPool2d(pool_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = self.pool(x)
        return F.hardswish(x)


batch_size = 64
in_channels = 64
out_channels = 128
kernel_size = 3
pool_size = 2
height = 128
width = 128

SMALL_SIZES = {"batch_size": 4, "in_channels": 8, "out_channels": 32, "height": 64, "width": 64}
ALT_SIZES = {"batch_size": 3, "in_channels": 3, "out_channels": 11, "height": 27, "width": 35}


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, pool_size]
