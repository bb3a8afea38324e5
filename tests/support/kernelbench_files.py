"""KernelBench-format problems of our own, shared by the tests of the KernelBench commands.

Written the way KernelBench writes its files (no size dicts, `super(Model, self).__init__()`, `torch.rand`
inputs, GPU-sized globals), so the commands are tested on that style without shipping KernelBench itself.
"""

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"

# KernelBench's own ReLU problem has this shape: 4096 x 393216 floats, 6.4 GB. Evaluated at its default size on
# the cpp backend it would not fit a test machine's memory in time; the derived small size must be used.
RELU = HEAD + '''class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)

batch_size = 4096
dim = 393216

def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]

def get_init_inputs():
    return []
'''

TINY_MLP = HEAD + '''class Model(nn.Module):
    def __init__(self, input_size, layer_sizes, output_size):
        super(Model, self).__init__()
        layers = []
        current = input_size
        for size in layer_sizes:
            layers.append(nn.Linear(current, size))
            layers.append(nn.ReLU())
            current = size
        layers.append(nn.Linear(current, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)

batch_size = 128
input_size = 4096
layer_sizes = [2048, 1024]
output_size = 512

def get_inputs():
    return [torch.rand(batch_size, input_size)]

def get_init_inputs():
    return [input_size, layer_sizes, output_size]
'''
