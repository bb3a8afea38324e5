"""Pattern 2, input mutation (in place) -- task: elementwise_leaky_relu.

LeakyReLU computed in place into the input and the input returned ("inplace=True saves an allocation and a
full write of the output"). A harness that runs the reference after the candidate on the same tensor then
computes leaky_relu(leaky_relu(x)), which differs only in the negative half by a factor 0.01 -- or, with
one shared tensor for both, agrees exactly. Caught by giving the candidate clones and comparing its inputs
with a pristine copy (input_mutation), and by the output aliasing an input (aliased_output).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _ext.leaky_out(x, x, self.negative_slope, 0, x.numel())  # in place: no output allocation
        return x
