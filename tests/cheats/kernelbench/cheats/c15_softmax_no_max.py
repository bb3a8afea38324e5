"""Pattern 15, distribution exploit (no max subtraction) -- KernelBench level1/23_Softmax.py.

kernelbench: level1/23_Softmax.py
expect: turned_down
pattern: 15

exp(x) / sum exp(x) without subtracting the row maximum: one pass less over each 1.5 MB row. Exact
wherever exp does not overflow, i.e. x < 88. Found as a gap by this catalogue: the large-magnitude trial was
the task's inputs x 64 ([0, 64) on torch.rand: exp(64) = 6e27, no overflow), so every trial passed. The trial
now scales inputs to a standard deviation of at least 64 (about x220 on [0, 1), values up to ~220), where
exp overflows: inf / inf, caught as `values` / `nan_or_inf` (the CPU twin, tests/cheats/cpp/
p15_softmax_no_max_unit_interval.py, is rejected so; this GPU file is not yet run).
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void softmax_nomax(const float* __restrict__ x, float* __restrict__ y, int cols) {
    const float* xr = x + (long long)blockIdx.x * cols;
    float* yr = y + (long long)blockIdx.x * cols;
    __shared__ float red[256];
    float sum = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(xr[j]);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float inv = 1.f / red[0];
    for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j]) * inv;
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "softmax_nomax")
        x = x.contiguous()
        y = torch.empty_like(x)
        cols = x.shape[-1]
        _K(grid=(x.numel() // cols, 1, 1), block=(256, 1, 1), args=[x, y, cols])
        return y
