"""Frobenius-norm normalization (KernelBench level 1, problem 37): two hand-written NVRTC kernels.

kernelbench: level1/37_FrobeniusNorm_.py
expect: accepted

y = x / ||x||_F over the whole tensor. The first kernel has each block add the squares of its grid-stride
share (float4 loads when aligned, double accumulators) and write one partial sum; the second has every block
add the same partials in the same order (so all blocks get the very same norm), then write x / norm in a
grid-stride loop. The element count (1.9e9 at the default size) arrives as a double.
"""

import torch
import torch.nn as nn

# <<FAST_CUDA_LAUNCHER>>

_SRC = r"""
// Sum over the block; every thread gets warp 0's result. blockDim.x: a multiple of 32.
__device__ double block_sum(double v, double* sh) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nw ? sh[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) sh[32] = v;
    }
    __syncthreads();
    return sh[32];
}

extern "C" __global__ void sumsq_partials(const float* __restrict__ x, double* __restrict__ partial,
                                          double n_d) {
    __shared__ double sh[33];
    const long long n = (long long)n_d;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    double acc = 0.0;
    if ((((unsigned long long)x) & 15ULL) == 0ULL) {
        const long long n4 = n >> 2;
        const float4* x4 = reinterpret_cast<const float4*>(x);
        for (long long i = start; i < n4; i += stride) {
            const float4 v = x4[i];
            acc += (double)(v.x * v.x + v.y * v.y) + (double)(v.z * v.z + v.w * v.w);
        }
        for (long long i = (n4 << 2) + start; i < n; i += stride) acc += (double)(x[i] * x[i]);
    } else {
        for (long long i = start; i < n; i += stride) acc += (double)(x[i] * x[i]);
    }
    acc = block_sum(acc, sh);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

extern "C" __global__ void fro_normalize(const float* __restrict__ x, const double* __restrict__ partial,
                                         int num_partials, float* __restrict__ y, double n_d) {
    __shared__ double sh[33];
    double acc = 0.0;
    for (int i = threadIdx.x; i < num_partials; i += blockDim.x) acc += partial[i];
    const float norm = (float)sqrt(block_sum(acc, sh));
    const long long n = (long long)n_d;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if ((((unsigned long long)x | (unsigned long long)y) & 15ULL) == 0ULL) {
        const long long n4 = n >> 2;
        const float4* x4 = reinterpret_cast<const float4*>(x);
        float4* y4 = reinterpret_cast<float4*>(y);
        for (long long i = start; i < n4; i += stride) {
            float4 v = x4[i];
            v.x = v.x / norm;
            v.y = v.y / norm;
            v.z = v.z / norm;
            v.w = v.w / norm;
            y4[i] = v;
        }
        for (long long i = (n4 << 2) + start; i < n; i += stride) y[i] = x[i] / norm;
    } else {
        for (long long i = start; i < n; i += stride) y[i] = x[i] / norm;
    }
}
"""
_KERNELS: dict = {}


def _kernel(name: str):
    if name not in _KERNELS:
        _KERNELS[name] = _fast_kernel(_SRC, name)
    return _KERNELS[name]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            raise TypeError(f"this kernel is written for float32, got {x.dtype}")
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n == 0:
            return y
        num_partials = min(1024, (n + 2047) // 2048)
        partial = torch.empty(num_partials, dtype=torch.float64, device=x.device)
        _kernel("sumsq_partials")(grid=(num_partials, 1, 1), block=(256, 1, 1), args=[x, partial, float(n)])
        _kernel("fro_normalize")(grid=(min((n + 1023) // 1024, 8192), 1, 1), block=(256, 1, 1),
                                 args=[x, partial, num_partials, y, float(n)])
        return y
