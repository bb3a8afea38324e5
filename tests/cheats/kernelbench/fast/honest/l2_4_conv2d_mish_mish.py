"""Conv2d_Mish_Mish (KernelBench level 2): Convolution in PyTorch, epilogue in one NVRTC kernel.

kernelbench: level2/4_Conv2d_Mish_Mish.py
expect: accepted

Epilogue: mish(mish(v)), mish(t) = t * tanh(log1p(exp(t))) as torch's CUDA kernel computes it. The convolution
is the module's own nn.Conv2d (created as the reference creates it, same attribute name, so the evaluator's
weights are the reference's). The kernel reads the convolution output once and writes a fresh tensor (float4
when aligned, grid-stride, 64-bit count passed as a double).
"""

import torch
import torch.nn as nn

# <<FAST_CUDA_LAUNCHER>>

_SRC = r"""
__device__ __forceinline__ float mish(float v) { return v * tanhf(log1pf(expf(v))); }
__device__ __forceinline__ float epilogue(float v, float p0, float p1, float p2) {
    return mish(mish(v));
}

extern "C" __global__ void mish_mish(const float* __restrict__ x, float* __restrict__ y,
                                     double n_d, double p0_d, double p1_d, double p2_d) {
    const long long n = (long long)n_d;
    const float p0 = (float)p0_d, p1 = (float)p1_d, p2 = (float)p2_d;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if ((((unsigned long long)x | (unsigned long long)y) & 15ULL) == 0ULL) {
        const long long n4 = n >> 2;
        const float4* x4 = reinterpret_cast<const float4*>(x);
        float4* y4 = reinterpret_cast<float4*>(y);
        for (long long i = start; i < n4; i += stride) {
            float4 v = x4[i];
            v.x = epilogue(v.x, p0, p1, p2);
            v.y = epilogue(v.y, p0, p1, p2);
            v.z = epilogue(v.z, p0, p1, p2);
            v.w = epilogue(v.w, p0, p1, p2);
            y4[i] = v;
        }
        for (long long i = (n4 << 2) + start; i < n; i += stride) y[i] = epilogue(x[i], p0, p1, p2);
    } else {
        for (long long i = start; i < n; i += stride) y[i] = epilogue(x[i], p0, p1, p2);
    }
}
"""
_kernel = None


def _get_kernel():
    global _kernel
    if _kernel is None:
        _kernel = _fast_kernel(_SRC, "mish_mish")
    return _kernel


def _epilogue(x: torch.Tensor, p0: float = 0.0, p1: float = 0.0, p2: float = 0.0) -> torch.Tensor:
    if x.dtype != torch.float32:
        raise TypeError(f"this kernel is written for float32, got {x.dtype}")
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        blocks = min((n + 1023) // 1024, 8192)
        _get_kernel()(grid=(blocks, 1, 1), block=(256, 1, 1),
                      args=[x, y, float(n), float(p0), float(p1), float(p2)])
    return y


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _epilogue(self.conv(x))
