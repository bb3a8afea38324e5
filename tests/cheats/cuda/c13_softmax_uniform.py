"""Pattern 13, degenerate output (GPU) -- task: norm_softmax.

Writes 1/N everywhere ("wide rows are almost uniform"). Caught by the output-relative tolerance (values).
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void fill_uniform(float* y, int n, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 1.0f / cols;
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "fill_uniform")
        y = torch.empty_like(x)
        n = x.numel()
        _K(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), args=[y, n, x.shape[-1]])
        return y
