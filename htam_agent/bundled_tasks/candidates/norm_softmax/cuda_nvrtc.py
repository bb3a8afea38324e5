"""Softmax over the last dimension as a plain CUDA kernel compiled by NVRTC (torch.cuda._compile_kernel):
one 512-thread block per row, online (max, sum) pass + write pass, float4 when the rows are aligned.
Compiled once, on the first forward."""

import torch
import torch.nn as nn

_SOURCE = r"""
#define NEG_INF __int_as_float(0xff800000)
#define THREADS 512

__device__ __forceinline__ void ms_merge(float& m, float& s, float m2, float s2) {
    if (m2 == NEG_INF) return;
    if (m == NEG_INF) { m = m2; s = s2; return; }
    const float mn = fmaxf(m, m2);
    s = s * expf(m - mn) + s2 * expf(m2 - mn);
    m = mn;
}

__device__ __forceinline__ void online_add(float& m, float& s, float v) {
    if (v == NEG_INF) return;
    if (v > m) { s *= expf(m - v); m = v; }
    s += expf(v - m);
}

extern "C" __global__ void __launch_bounds__(THREADS) softmax_f32(const float* __restrict__ x, float* __restrict__ y, int cols) {
    const long long off = (long long)blockIdx.x * cols;
    const float* xr = x + off;
    float* yr = y + off;
    const bool vec = ((cols & 3) == 0) && (((((unsigned long long)xr) | ((unsigned long long)yr)) & 15ull) == 0);
    float m = NEG_INF, s = 0.0f;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int i = threadIdx.x; i < (cols >> 2); i += THREADS) {
            const float4 v = x4[i];
            const float mx = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
            if (mx == NEG_INF) continue;
            if (mx > m) { s *= expf(m - mx); m = mx; }
            s += (expf(v.x - m) + expf(v.y - m)) + (expf(v.z - m) + expf(v.w - m));
        }
    } else {
        for (int i = threadIdx.x; i < cols; i += THREADS) online_add(m, s, xr[i]);
    }
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        ms_merge(m, s, m2, s2);
    }
    __shared__ float sm[THREADS / 32], ss[THREADS / 32];
    __shared__ float row_m, row_inv;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) { sm[warp] = m; ss[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        m = lane < THREADS / 32 ? sm[lane] : NEG_INF;
        s = lane < THREADS / 32 ? ss[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) {
            const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
            const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
            ms_merge(m, s, m2, s2);
        }
        if (lane == 0) { row_m = m; row_inv = 1.0f / s; }
    }
    __syncthreads();
    const float mm = row_m, inv = row_inv;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (int i = threadIdx.x; i < (cols >> 2); i += THREADS) {
            float4 v = x4[i];
            v.x = expf(v.x - mm) * inv;
            v.y = expf(v.y - mm) * inv;
            v.z = expf(v.z - mm) * inv;
            v.w = expf(v.w - mm) * inv;
            y4[i] = v;
        }
    } else {
        for (int i = threadIdx.x; i < cols; i += THREADS) yr[i] = expf(xr[i] - mm) * inv;
    }
}
"""

_KERNEL = None
_THREADS = 512
_MAX_ROWS_PER_LAUNCH = 1 << 30


def _kernel():
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = torch.cuda._compile_kernel(_SOURCE, "softmax_f32")
    return _KERNEL


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (x.is_cuda and x.dtype == torch.float32 and x.dim() >= 1):
            raise ValueError("x must be a float32 CUDA tensor with at least one dimension")
        x = x.contiguous()
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
        cols = x.shape[-1]
        if x.numel() == 0:
            return out
        if cols >= 2**31:
            raise ValueError("rows longer than 2**31 - 1 elements are not supported")
        rows = x.numel() // cols
        x2, y2 = x.view(rows, cols), out.view(rows, cols)
        kernel = _kernel()
        for start in range(0, rows, _MAX_ROWS_PER_LAUNCH):
            count = min(_MAX_ROWS_PER_LAUNCH, rows - start)
            kernel(grid=(count, 1, 1), block=(_THREADS, 1, 1), args=[x2[start : start + count], y2[start : start + count], cols])
        return out
