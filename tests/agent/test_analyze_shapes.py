"""Issue 23: the analyze node measures the shapes the memory's strategies are written for (on the meta device, at
the size the evaluator times), and the state's description says them."""

from __future__ import annotations

from support.kernelbench_files import RELU

from htam_agent.nodes.analyze import shape_facts, shapes_text

SOFTMAX = RELU.replace("torch.relu(x)", "torch.softmax(x, dim=1)")
GROUPNORM = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, num_features, num_groups):
        super(Model, self).__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x):
        return self.gn(x)

batch_size = 16
features = 64
num_groups = 8
dim1 = 256
dim2 = 256

def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]

def get_init_inputs():
    return [features, num_groups]
'''


def test_shape_facts_of_kernelbench_style_files():
    assert shape_facts(RELU, "19_ReLU.py") == {"elements": 4096 * 393216, "row": 393216}
    assert shape_facts(SOFTMAX, "23_Softmax.py") == {"elements": 4096 * 393216, "row": 393216, "reduce": 393216}
    gn = shape_facts(GROUPNORM, "35_GroupNorm_.py")
    assert gn == {"elements": 16 * 64 * 256 * 256, "row": 256, "channels": 64, "spatial": 65536,
                  "reduce": 8 * 65536}  # 64 channels / 8 groups x 256 x 256
    assert shapes_text({"row": 393216, "reduce": 393216}) == "row length 393,216, reduction size 393,216"
    assert shape_facts("x = 1\n", "broken.py") == {}
