"""L2 normalization over dim 1 (KernelBench level 1, problem 39): hand-written NVRTC kernels.

kernelbench: level1/39_L2Norm_.py
expect: accepted

y = x / ||x||_2 over dim 1 (no epsilon, as the reference). The input is seen as (outer, d, inner) around
dim 1. For the problem's 2-D input one block owns a row: per-thread partial sums of squares, a block
reduction, then a second pass writes the row divided by the norm (float4 when the row is 16-byte aligned).
For inputs of more dimensions (inner > 1) one thread owns an (outer, inner) line, walked with stride inner
(coalesced across threads). Sizes that can pass 2**31 arrive as doubles (the default input has
2**31 - 32768 elements).
"""

import math

import torch
import torch.nn as nn

# <<FAST_CUDA_LAUNCHER>>

_SRC = r"""
// What one element adds to the line's accumulator, and the divisor made from the accumulated sum.
__device__ __forceinline__ float term(float v) { return v * v; }
__device__ __forceinline__ float divisor(float acc, int d, float eps) { return sqrtf(acc); }

// Sum over the block; every thread gets warp 0's result. blockDim.x: a multiple of 32.
__device__ float block_sum(float v, float* sh) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();  // the previous row's readers of sh[32] are done
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nw ? sh[lane] : 0.f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) sh[32] = v;
    }
    __syncthreads();
    return sh[32];
}

extern "C" __global__ void norm_rows(const float* __restrict__ x, float* __restrict__ y, double rows_d,
                                     int cols, double eps_d) {
    __shared__ float sh[33];
    const long long rows = (long long)rows_d;
    const float eps = (float)eps_d;
    const bool vec = (cols & 3) == 0 && (((unsigned long long)x | (unsigned long long)y) & 15ULL) == 0ULL;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float acc = 0.f;
        if (vec) {
            const float4* x4 = reinterpret_cast<const float4*>(xr);
            for (int i = threadIdx.x; i < (cols >> 2); i += blockDim.x) {
                const float4 v = x4[i];
                acc += term(v.x) + term(v.y) + term(v.z) + term(v.w);
            }
        } else {
            for (int i = threadIdx.x; i < cols; i += blockDim.x) acc += term(xr[i]);
        }
        const float den = divisor(block_sum(acc, sh), cols, eps);
        if (vec) {
            const float4* x4 = reinterpret_cast<const float4*>(xr);
            float4* y4 = reinterpret_cast<float4*>(yr);
            for (int i = threadIdx.x; i < (cols >> 2); i += blockDim.x) {
                float4 v = x4[i];
                v.x = v.x / den;
                v.y = v.y / den;
                v.z = v.z / den;
                v.w = v.w / den;
                y4[i] = v;
            }
        } else {
            for (int i = threadIdx.x; i < cols; i += blockDim.x) yr[i] = xr[i] / den;
        }
    }
}

extern "C" __global__ void norm_cols(const float* __restrict__ x, float* __restrict__ y, double outer_d,
                                     int d, double inner_d, double eps_d) {
    const long long outer = (long long)outer_d, inner = (long long)inner_d;
    const float eps = (float)eps_d;
    const long long total = outer * inner;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const long long o = t / inner;
        const long long base = o * d * inner + (t - o * inner);
        float acc = 0.f;
        for (int k = 0; k < d; ++k) acc += term(x[base + k * inner]);
        const float den = divisor(acc, d, eps);
        for (int k = 0; k < d; ++k) {
            const long long j = base + k * inner;
            y[j] = x[j] / den;
        }
    }
}
"""
_KERNELS: dict = {}


def _kernel(name: str):
    if name not in _KERNELS:
        _KERNELS[name] = _fast_kernel(_SRC, name)
    return _KERNELS[name]


def _normalize_dim1(x: torch.Tensor, eps: float) -> torch.Tensor:
    if x.dtype != torch.float32:
        raise TypeError(f"this kernel is written for float32, got {x.dtype}")
    if x.dim() < 2:
        raise IndexError(f"dim 1 out of range for a {x.dim()}-d tensor")
    x = x.contiguous()
    y = torch.empty_like(x)
    outer, d, inner = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    if x.numel() == 0:
        return y
    if d >= 2**31:
        raise ValueError("normalized dimension too long for this kernel (2**31 or more)")
    if inner == 1:
        threads = 512 if d >= 16384 else 256
        _kernel("norm_rows")(grid=(min(outer, 1 << 20), 1, 1), block=(threads, 1, 1),
                             args=[x, y, float(outer), d, float(eps)])
    else:
        blocks = min((outer * inner + 255) // 256, 1 << 16)
        _kernel("norm_cols")(grid=(blocks, 1, 1), block=(256, 1, 1),
                             args=[x, y, float(outer), d, float(inner), float(eps)])
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _normalize_dim1(x, 0.0)
