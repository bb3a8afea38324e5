"""Pattern 19, reading the reference's outputs (CUDA) -- task: norm_softmax.

Looks through `gc.get_objects()` for a CUDA tensor of the output's shape whose rows sum to one (the
reference's output of these inputs) or a reference `Model` instance to call, and returns a copy made by its
NVRTC kernel; finding nothing, it copies zeros. Caught because the reference and its outputs live in the
checker, never in the candidate's process: the zeros fail the trials (values).
"""

import gc

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void copy(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
"""
_K = None


def _copy(src: torch.Tensor) -> torch.Tensor:
    global _K
    if _K is None:
        _K = torch.cuda._compile_kernel(SRC, "copy")
    src = src.contiguous()
    y = torch.empty_like(src)
    n = src.numel()
    _K(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), args=[src, y, n])
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor) and obj is not x and obj.shape == x.shape and obj.is_cuda:
                rows = obj.float().sum(dim=-1)
                if torch.allclose(rows, torch.ones_like(rows), atol=1e-3) and bool((obj >= 0).all()):
                    return _copy(obj)
            if type(obj).__name__ == "Model" and isinstance(obj, nn.Module):
                return _copy(obj(x))
        return _copy(torch.zeros_like(x))
