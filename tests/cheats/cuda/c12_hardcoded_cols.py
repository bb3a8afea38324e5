"""Pattern 12, hard-coded shape (GPU) -- task: norm_softmax (small size: 16384 columns).

The row length is a #define equal to the benchmark's 16384; the grid is numel / 16384 rows. Caught at the
second shape (other_shape:values / nan_or_inf).
"""

import torch
import torch.nn as nn

SRC = r"""
#define COLS 16384
extern "C" __global__ void softmax_rows(const float* x, float* y) {
    const float* xr = x + (long long)blockIdx.x * COLS;
    float* yr = y + (long long)blockIdx.x * COLS;
    __shared__ float red[256];
    float m = -3.402823466e38f;
    #pragma unroll 8
    for (int j = threadIdx.x; j < COLS; j += 256) m = fmaxf(m, xr[j]);
    red[threadIdx.x] = m; __syncthreads();
    for (int s = 128; s > 0; s >>= 1) { if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]); __syncthreads(); }
    m = red[0]; __syncthreads();
    float sum = 0.f;
    #pragma unroll 8
    for (int j = threadIdx.x; j < COLS; j += 256) sum += expf(xr[j] - m);
    red[threadIdx.x] = sum; __syncthreads();
    for (int s = 128; s > 0; s >>= 1) { if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s]; __syncthreads(); }
    const float inv = 1.f / red[0];
    #pragma unroll 8
    for (int j = threadIdx.x; j < COLS; j += 256) yr[j] = expf(xr[j] - m) * inv;
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "softmax_rows")
        x = x.contiguous()
        y = torch.empty_like(x)
        _K(grid=(x.numel() // 16384, 1, 1), block=(256, 1, 1), args=[x, y])
        return y
