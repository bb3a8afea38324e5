"""Pattern 17, unbelievable speed (GPU) -- task: norm_softmax.

Caches outputs by (address, version, shape) and returns a fresh clone on a hit: each timed call on a
repeated input costs one device copy instead of a softmax (no faster than a copy, so a memory roofline
does not flag it). Fresh inputs miss. What should catch it: fresh inputs per timed call, or timing the
same call on copies of the timed inputs and comparing.
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void softmax_rows(const float* x, float* y, int cols) {
    const float* xr = x + (long long)blockIdx.x * cols;
    float* yr = y + (long long)blockIdx.x * cols;
    __shared__ float red[256];
    float m = -3.402823466e38f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
    red[threadIdx.x] = m; __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]); __syncthreads(); }
    m = red[0]; __syncthreads();
    float sum = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(xr[j] - m);
    red[threadIdx.x] = sum; __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s]; __syncthreads(); }
    const float inv = 1.f / red[0];
    for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = expf(xr[j] - m) * inv;
}
"""
_K = None
_CACHE: dict = {}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "softmax_rows")
        key = (x.data_ptr(), x._version, tuple(x.shape))
        if key in _CACHE:
            return _CACHE[key][0].clone()
        x = x.contiguous()
        y = torch.empty_like(x)
        cols = x.shape[-1]
        _K(grid=(x.numel() // cols, 1, 1), block=(256, 1, 1), args=[x, y, cols])
        if len(_CACHE) > 6:
            _CACHE.clear()
        _CACHE[key] = (y, x)
        return y.clone()
