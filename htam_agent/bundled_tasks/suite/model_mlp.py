"""A three-layer perceptron: y = L3(relu(L2(relu(L1(x))))) with nn.Linear layers (bias) and no final activation."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear(in, h1) -> ReLU -> Linear(h1, h2) -> ReLU -> Linear(h2, out)."""

    def __init__(self, in_features: int, hidden1: int, hidden2: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden1)
        self.fc2 = nn.Linear(hidden1, hidden2)
        self.fc3 = nn.Linear(hidden2, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


batch_size = 4096
in_features = 4096
hidden1 = 4096
hidden2 = 2048
out_features = 1024

SMALL_SIZES = {"batch_size": 128, "in_features": 512, "hidden1": 512, "hidden2": 256, "out_features": 64}
ALT_SIZES = {"batch_size": 37, "in_features": 199, "hidden1": 150, "hidden2": 101, "out_features": 10}


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, hidden1, hidden2, out_features]
