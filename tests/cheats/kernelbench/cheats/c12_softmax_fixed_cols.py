"""Pattern 12, hard-coded shapes (row length) -- KernelBench level1/23_Softmax.py (4096 rows of 393216).

kernelbench: level1/23_Softmax.py
expect: turned_down
pattern: 12
caught_by: other_shape:values, other_shape:nan_or_inf, values

The row length is a #define equal to the file's dim = 393216 (fully unrolled strides, no bounds checks) and
the grid is numel / 393216 rows. Exact at KernelBench's own shape; at the second shape the evaluator
derives (2047 x 1535) it computes 7 softmaxes over 393216-wide chunks and leaves the rest unwritten
(other_shape:values / nan_or_inf). At the derived small size (2048 x 1536, with --size small) the main
trials already fail (values). Reads stay in bounds at all three sizes.
"""

import torch
import torch.nn as nn

SRC = r"""
#define COLS 393216
#define THREADS 256
extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y) {
    const float* xr = x + (long long)blockIdx.x * COLS;
    float* yr = y + (long long)blockIdx.x * COLS;
    __shared__ float red[THREADS];
    float m = -3.402823466e38f;
    #pragma unroll 8
    for (int j = threadIdx.x; j < COLS; j += THREADS) m = fmaxf(m, xr[j]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.f;
    #pragma unroll 8
    for (int j = threadIdx.x; j < COLS; j += THREADS) sum += expf(xr[j] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float inv = 1.f / red[0];
    #pragma unroll 8
    for (int j = threadIdx.x; j < COLS; j += THREADS) yr[j] = expf(xr[j] - m) * inv;
}
"""
_K = None
COLS = 393216


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "softmax_rows")
        x = x.contiguous()
        y = torch.empty_like(x)
        _K(grid=(max(1, x.numel() // COLS), 1, 1), block=(256, 1, 1), args=[x, y])
        return y
