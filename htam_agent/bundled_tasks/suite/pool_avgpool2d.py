"""2-D average pooling, 3x3 window, stride 1, padding 1 (zeros counted in the average), on an NCHW tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.AvgPool2d(kernel_size, stride, padding) with the default count_include_pad=True."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 64
channels = 64
height = 512
width = 512
kernel_size = 3
stride = 1
padding = 1

SMALL_SIZES = {"batch_size": 4, "channels": 16, "height": 128, "width": 128}
ALT_SIZES = {"batch_size": 3, "channels": 5, "height": 41, "width": 27}


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding]
