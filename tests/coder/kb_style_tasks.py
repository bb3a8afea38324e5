"""Small tasks written the way KernelBench writes them, for the staged exemplar tests (written here, not copied).

KernelBench's idioms: `super(Model, self).__init__()`, `torch.nn.functional` calls, `nn` modules built with
constructor arguments, tensor methods, keyword arguments, dims held as attributes (`self.dim`). Each task has
small defaults and SMALL/ALT sizes (odd, non-power-of-two) so the CPU evaluator runs it quickly.
"""

from __future__ import annotations

from pathlib import Path

_HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"

TASKS: dict[str, str] = {
    "kb_sum_dim_scale": '''class Model(nn.Module):
    def __init__(self, dim, scale):
        super(Model, self).__init__()
        self.dim = dim
        self.scale = scale

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True) * self.scale


batch_size = 6
dim1 = 40
dim2 = 24
SMALL_SIZES = {"batch_size": 6, "dim1": 40, "dim2": 24}
ALT_SIZES = {"batch_size": 3, "dim1": 37, "dim2": 19}


def get_inputs():
    return [torch.rand(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1, 0.5]
''',
    "kb_conv_groupnorm_swish": '''class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, num_groups):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x):
        x = self.conv(x)
        x = self.group_norm(x)
        x = x * torch.sigmoid(x)
        x = F.hardtanh(x, min_val=-2.0, max_val=2.0)
        return x


batch_size = 4
in_channels = 3
out_channels = 8
height = width = 12
SMALL_SIZES = {"batch_size": 4, "height": 12, "width": 12}
ALT_SIZES = {"batch_size": 3, "height": 11, "width": 9}


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, 3, 4]
''',
    "kb_linear_batchnorm_gelu": '''class Model(nn.Module):
    def __init__(self, in_features, out_features, eps=1e-5, momentum=0.1):
        super(Model, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features, eps=eps, momentum=momentum)

    def forward(self, x):
        x = self.gemm(x)
        x = self.bn(x)
        return torch.nn.functional.gelu(x)


batch_size = 32
in_features = 24
out_features = 20
SMALL_SIZES = {"batch_size": 32, "in_features": 24, "out_features": 20}
ALT_SIZES = {"batch_size": 17, "in_features": 13, "out_features": 11}


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
''',
    "kb_convT_maxpool_mean": '''class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, bias_shape):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.maxpool(x)
        x = x.mean(dim=(2, 3), keepdim=True)
        return torch.tanh(x + self.bias)


batch_size = 2
in_channels = 3
out_channels = 6
height = width = 7
bias_shape = (out_channels, 1, 1)
SMALL_SIZES = {"batch_size": 2, "height": 7, "width": 7}
ALT_SIZES = {"batch_size": 3, "height": 5, "width": 9}


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, 4, 2, 1, bias_shape]
''',
    "kb_avgpool3d": '''class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super(Model, self).__init__()
        self.avg_pool = nn.AvgPool3d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.avg_pool(x)


batch_size = 2
channels = 3
depth = height = width = 10
SMALL_SIZES = {"batch_size": 2, "depth": 10, "height": 10, "width": 10}
ALT_SIZES = {"batch_size": 1, "depth": 7, "height": 9, "width": 11}


def get_inputs():
    return [torch.rand(batch_size, channels, depth, height, width)]


def get_init_inputs():
    return [3, 2, 1]
''',
    "kb_reverse_masked_cumsum": '''class Model(nn.Module):
    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x, mask):
        return torch.cumsum((x * mask).flip(self.dim), dim=self.dim).flip(self.dim)


batch_size = 8
length = 300
SMALL_SIZES = {"batch_size": 8, "length": 300}
ALT_SIZES = {"batch_size": 5, "length": 251}


def get_inputs():
    return [torch.rand(batch_size, length), torch.randint(0, 2, (batch_size, length)).bool()]


def get_init_inputs():
    return [1]
''',
    "kb_argmin_dim": '''class Model(nn.Module):
    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return torch.argmin(x, dim=self.dim)


batch_size = 4
dim1 = 33
dim2 = 20
SMALL_SIZES = {"batch_size": 4, "dim1": 33, "dim2": 20}
ALT_SIZES = {"batch_size": 3, "dim1": 29, "dim2": 7}


def get_inputs():
    return [torch.rand(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]
''',
    "kb_triplet_loss": '''class Model(nn.Module):
    def __init__(self, margin=1.0):
        super(Model, self).__init__()
        self.loss_fn = torch.nn.TripletMarginLoss(margin=margin)

    def forward(self, anchor, positive, negative):
        return self.loss_fn(anchor, positive, negative)


batch_size = 16
features = 40
SMALL_SIZES = {"batch_size": 16, "features": 40}
ALT_SIZES = {"batch_size": 13, "features": 27}


def get_inputs():
    return [torch.rand(batch_size, features), torch.rand(batch_size, features), torch.rand(batch_size, features)]


def get_init_inputs():
    return [1.0]
''',
    "kb_log_softmax_dim1": '''class Model(nn.Module):
    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return F.log_softmax(x, dim=self.dim)


batch_size = 4
channels = 24
spatial = 30
SMALL_SIZES = {"batch_size": 4, "channels": 24, "spatial": 30}
ALT_SIZES = {"batch_size": 3, "channels": 13, "spatial": 17}


def get_inputs():
    return [torch.rand(batch_size, channels, spatial)]


def get_init_inputs():
    return [1]
''',
    "kb_conv_instancenorm_max": '''class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, divide_by):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.instance_norm = nn.InstanceNorm2d(out_channels)
        self.divide_by = divide_by

    def forward(self, x):
        x = self.conv(x)
        x = self.instance_norm(x)
        x = x / self.divide_by
        x = torch.max(x, dim=1, keepdim=True)[0]
        return x


batch_size = 3
in_channels = 3
out_channels = 8
height = width = 10
SMALL_SIZES = {"batch_size": 3, "height": 10, "width": 10}
ALT_SIZES = {"batch_size": 2, "height": 9, "width": 7}


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, 3, 2.0]
''',
}

# what the lowering must make of each: the stage kinds in order, and whether a GEMM/conv stays in PyTorch
EXPECTED = {
    "kb_sum_dim_scale": (["reduce:sum"], False),
    "kb_conv_groupnorm_swish": (["norm:standardize"], True),
    "kb_linear_batchnorm_gelu": (["reduce:meanvar", "map"], True),
    "kb_convT_maxpool_mean": (["pool:max", "reduce:mean"], True),
    "kb_avgpool3d": (["pool:avg"], False),
    "kb_reverse_masked_cumsum": (["scan:sum"], False),
    "kb_argmin_dim": (["reduce:argmin"], False),
    "kb_triplet_loss": (["reduce:sum", "reduce:sum", "reduce:mean"], False),
    "kb_log_softmax_dim1": (["norm:log_softmax"], False),
    "kb_conv_instancenorm_max": (["norm:standardize", "reduce:max"], True),
}


def source(name: str) -> str:
    return _HEAD + TASKS[name]


def write(name: str, folder: Path) -> Path:
    path = folder / f"{name}.py"
    path.write_text(source(name))
    return path
