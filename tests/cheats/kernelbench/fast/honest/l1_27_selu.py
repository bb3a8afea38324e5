"""SELU (KernelBench level 1, problem 27): one hand-written NVRTC elementwise kernel.

kernelbench: level1/27_SELU_.py
expect: accepted

y = scale * x for x > 0, else scale * alpha * expm1(x), with torch's SELU constants. The kernel reads x once
and writes a fresh output, with float4 loads and stores when both pointers are 16-byte aligned (a scalar tail,
and a scalar path otherwise), in a grid-stride loop whose 64-bit element count arrives as a double (exact
below 2**53; a Python int would arrive as a 32-bit C int).
"""

import torch
import torch.nn as nn

# <<FAST_CUDA_LAUNCHER>>

_SRC = r"""
__device__ __forceinline__ float op(float v, float a) {
    const float scale = 1.0507009873554804934f;
    const float negcoef = 1.6732632423543772848f * scale;
    return v > 0.f ? v * scale : expm1f(v) * negcoef;
}

extern "C" __global__ void selu_kernel(const float* __restrict__ x, float* __restrict__ y, double n_d,
                                       double a_d) {
    const long long n = (long long)n_d;
    const float a = (float)a_d;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if ((((unsigned long long)x | (unsigned long long)y) & 15ULL) == 0ULL) {
        const long long n4 = n >> 2;
        const float4* x4 = reinterpret_cast<const float4*>(x);
        float4* y4 = reinterpret_cast<float4*>(y);
        for (long long i = start; i < n4; i += stride) {
            float4 v = x4[i];
            v.x = op(v.x, a);
            v.y = op(v.y, a);
            v.z = op(v.z, a);
            v.w = op(v.w, a);
            y4[i] = v;
        }
        for (long long i = (n4 << 2) + start; i < n; i += stride) y[i] = op(x[i], a);
    } else {
        for (long long i = start; i < n; i += stride) y[i] = op(x[i], a);
    }
}
"""
_kernel = None


def _get_kernel():
    global _kernel
    if _kernel is None:
        _kernel = _fast_kernel(_SRC, "selu_kernel")
    return _kernel


def _apply(x: torch.Tensor, a: float) -> torch.Tensor:
    if x.dtype != torch.float32:
        raise TypeError(f"this kernel is written for float32, got {x.dtype}")
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        blocks = min((n + 1023) // 1024, 8192)
        _get_kernel()(grid=(blocks, 1, 1), block=(256, 1, 1), args=[x, y, float(n), float(a)])
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _apply(x, 0.0)
