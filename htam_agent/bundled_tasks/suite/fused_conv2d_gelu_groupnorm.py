"""3x3 convolution (no padding), then GELU, then GroupNorm: y = groupnorm(gelu(conv2d(x)))."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """nn.Conv2d(in_channels, out_channels, kernel_size) -> F.gelu -> nn.GroupNorm(num_groups, out_channels)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, num_groups: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = F.gelu(x)
        return self.group_norm(x)


batch_size = 32
in_channels = 64
out_channels = 128
kernel_size = 3
num_groups = 8
height = 128
width = 128

SMALL_SIZES = {
    "batch_size": 4,
    "in_channels": 8,
    "out_channels": 32,
    "num_groups": 8,
    "height": 64,
    "width": 64,
}
ALT_SIZES = {
    "batch_size": 3,
    "in_channels": 3,
    "out_channels": 12,
    "num_groups": 3,
    "height": 29,
    "width": 21,
}


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups]
