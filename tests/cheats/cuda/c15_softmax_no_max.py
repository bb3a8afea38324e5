"""Pattern 15, distribution exploit (GPU) -- task: norm_softmax.

No max subtraction: exp(x) / sum exp(x). Exact for standard-normal inputs, inf/NaN for large ones. Caught
by the large-magnitude trial (nan_or_inf).
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void softmax_nomax(const float* x, float* y, int cols) {
    const float* xr = x + (long long)blockIdx.x * cols;
    float* yr = y + (long long)blockIdx.x * cols;
    __shared__ float red[256];
    float sum = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(xr[j]);
    red[threadIdx.x] = sum; __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s]; __syncthreads(); }
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
