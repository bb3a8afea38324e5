"""Pattern 15, distribution exploit (no max subtraction) -- KernelBench level1/23_Softmax.py.

kernelbench: level1/23_Softmax.py
expect: missed
pattern: 15
missing: a trial whose inputs reach exp's overflow (x > 88); the largest trial here is torch.rand x 64

exp(x) / sum exp(x) without subtracting the row maximum: one pass less over each 1.5 MB row. Exact
wherever exp does not overflow, i.e. x < 88. The evaluator's trials on this file stay below that: the
task's [0, 1), standard normal, signed uniform, ties in [-2, 2], the +16 std shift (about 5) and the
large-magnitude trial (the task's inputs x 64: exp(64) = 6e27, row sums near 4e31, far from FLT_MAX). So this
candidate is expected to be ACCEPTED today: a known gap (a trial with inputs beyond 88, e.g. x 1000 or
+100, would catch it with nan_or_inf). The runner reports it as a gap, and as a mismatch once it is caught,
so that this header gets updated.
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
