"""Sum over the module's dim, keepdim=True (KernelBench level 1, problem 47): hand-written NVRTC kernels.

kernelbench: level1/47_Sum_reduction_over_a_dimension.py
expect: accepted

The input is seen as (outer, d, inner) around `dim` (the constructor's). For the problem's (b, d1, d2) input
reduced over dim 1, inner = d2 and one thread owns an output: it adds its d values with stride inner, so the
threads of a warp read consecutive addresses. When inner is 1 (the last dimension reduced) one block owns a
row: per-thread partial sums (float4 when aligned) and a block reduction. Sizes that can pass 2**31 arrive as
doubles.
"""

import math

import torch
import torch.nn as nn

# <<FAST_CUDA_LAUNCHER>>

_SRC = r"""
// The reduction: identity, combine, and the value written from the reduced one.
#define IDENTITY 0.f
__device__ __forceinline__ float combine(float a, float b) { return a + b; }
__device__ __forceinline__ float finish(float acc, int d) { return acc; }

// Combines over the block; every thread gets warp 0's result. blockDim.x: a multiple of 32.
__device__ float block_reduce(float v, float* sh) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v = combine(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();  // the previous row's readers of sh[32] are done
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nw ? sh[lane] : IDENTITY;
        for (int o = 16; o > 0; o >>= 1) v = combine(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (lane == 0) sh[32] = v;
    }
    __syncthreads();
    return sh[32];
}

extern "C" __global__ void reduce_rows(const float* __restrict__ x, float* __restrict__ y, double rows_d,
                                       int cols) {
    __shared__ float sh[33];
    const long long rows = (long long)rows_d;
    const bool vec = (cols & 3) == 0 && (((unsigned long long)x) & 15ULL) == 0ULL;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* xr = x + r * cols;
        float acc = IDENTITY;
        if (vec) {
            const float4* x4 = reinterpret_cast<const float4*>(xr);
            for (int i = threadIdx.x; i < (cols >> 2); i += blockDim.x) {
                const float4 v = x4[i];
                acc = combine(combine(acc, v.x), v.y);
                acc = combine(combine(acc, v.z), v.w);
            }
        } else {
            for (int i = threadIdx.x; i < cols; i += blockDim.x) acc = combine(acc, xr[i]);
        }
        acc = block_reduce(acc, sh);
        if (threadIdx.x == 0) y[r] = finish(acc, cols);
    }
}

extern "C" __global__ void reduce_cols(const float* __restrict__ x, float* __restrict__ y, double outer_d,
                                       int d, double inner_d) {
    const long long outer = (long long)outer_d, inner = (long long)inner_d;
    const long long total = outer * inner;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const long long o = t / inner;
        const float* p = x + o * d * inner + (t - o * inner);
        float acc = IDENTITY;
        for (int k = 0; k < d; ++k) acc = combine(acc, p[k * inner]);
        y[t] = finish(acc, d);
    }
}
"""
_KERNELS: dict = {}


def _kernel(name: str):
    if name not in _KERNELS:
        _KERNELS[name] = _fast_kernel(_SRC, name)
    return _KERNELS[name]


def _reduce(x: torch.Tensor, dim: int, keepdim: bool) -> torch.Tensor:
    if x.dtype != torch.float32:
        raise TypeError(f"this kernel is written for float32, got {x.dtype}")
    nd = max(x.dim(), 1)
    if not -nd <= dim < nd:
        raise IndexError(f"dim {dim} out of range for a {x.dim()}-d tensor")
    dim %= nd
    x = x.contiguous()
    shape = list(x.shape) or [1]
    d = shape[dim]
    outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1:])
    out_shape = shape[:dim] + ([1] if keepdim else []) + shape[dim + 1:]
    if x.dim() == 0:
        out_shape = []
    y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    if y.numel() == 0:
        return y
    if d >= 2**31:
        raise ValueError("reduced dimension too long for this kernel (2**31 or more)")
    if inner == 1:
        threads = 512 if d >= 16384 else 256
        _kernel("reduce_rows")(grid=(min(outer, 1 << 20), 1, 1), block=(threads, 1, 1),
                               args=[x, y, float(outer), d])
    else:
        blocks = min((outer * inner + 255) // 256, 1 << 16)
        _kernel("reduce_cols")(grid=(blocks, 1, 1), block=(256, 1, 1),
                               args=[x, y, float(outer), d, float(inner)])
    return y


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _reduce(x, self.dim, keepdim=True)
