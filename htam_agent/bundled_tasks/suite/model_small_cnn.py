"""A small image classifier: two (3x3 conv, ReLU, 2x2 max-pool) blocks, flatten, and a Linear head -> logits."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv(in, c1) -> ReLU -> MaxPool(2) -> Conv(c1, c2) -> ReLU -> MaxPool(2) -> flatten -> Linear(classes)."""

    def __init__(
        self, in_channels: int, channels1: int, channels2: int, height: int, width: int, num_classes: int
    ):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels1, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(channels1, channels2, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        flat = channels2 * (height // 2 // 2) * (width // 2 // 2)
        self.head = nn.Linear(flat, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        return self.head(x)


batch_size = 256
in_channels = 3
channels1 = 32
channels2 = 64
height = 128
width = 128
num_classes = 1000

SMALL_SIZES = {
    "batch_size": 8,
    "channels1": 16,
    "channels2": 32,
    "height": 64,
    "width": 64,
    "num_classes": 10,
}
ALT_SIZES = {"batch_size": 3, "channels1": 6, "channels2": 11, "height": 37, "width": 30, "num_classes": 7}


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, channels1, channels2, height, width, num_classes]
