"""Honest twin of the side-stream cheat -- KernelBench level1/20_LeakyReLU.py.

kernelbench: level1/20_LeakyReLU.py
expect: accepted
pattern: 3

The very kernel of c03_side_stream_leaky_relu.py, launched on the caller's stream. Must be accepted; its
time is the yardstick the side-stream cheat must not beat.
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void leaky_relu(const float* __restrict__ x, float* __restrict__ y, int n, double slope) {
    const float s = (float)slope;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        y[i] = v > 0.f ? v : v * s;
    }
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "leaky_relu")
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        blocks = max(1, min((n + 255) // 256, 16384))
        _K(grid=(blocks, 1, 1), block=(256, 1, 1), args=[x, y, n, float(self.negative_slope)])
        return y
