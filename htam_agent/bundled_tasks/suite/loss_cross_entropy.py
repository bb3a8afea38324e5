"""Cross-entropy loss of logits against int64 class targets, averaged over the batch (a scalar)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.cross_entropy(logits, targets) with reduction='mean'."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets, reduction="mean")


batch_size = 32768
num_classes = 32000

SMALL_SIZES = {"batch_size": 512, "num_classes": 2000}
ALT_SIZES = {"batch_size": 97, "num_classes": 333}


def get_inputs():
    logits = torch.randn(batch_size, num_classes)
    targets = torch.randint(0, num_classes, (batch_size,))
    return [logits, targets]


def get_init_inputs():
    return []
