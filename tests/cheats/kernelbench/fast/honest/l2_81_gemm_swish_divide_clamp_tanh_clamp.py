"""Gemm_Swish_Divide_Clamp_Tanh_Clamp (KernelBench level 2): GEMM in PyTorch, epilogue in one NVRTC kernel.

kernelbench: level2/81_Gemm_Swish_Divide_Clamp_Tanh_Clamp.py
expect: accepted

Epilogue: t = v * sigmoid(v) / 2, clamped to [-1, 1], then tanh, clamped to [-1, 1] again. The GEMM is
F.linear with the module's own nn.Linear parameters (created as the reference creates them, same attribute
name, so the evaluator's weights are the reference's). The kernel reads the GEMM output once and writes a
fresh tensor (float4 when aligned, grid-stride, 64-bit count passed as a double).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

# <<FAST_CUDA_LAUNCHER>>

_SRC = r"""
__device__ __forceinline__ float sigmoidf(float v) { return 1.f / (1.f + expf(-v)); }
__device__ __forceinline__ float epilogue(float v, float p0, float p1, float p2) {
    float t = (v * sigmoidf(v)) * 0.5f;
    t = t < -1.f ? -1.f : (t > 1.f ? 1.f : t);
    t = tanhf(t);
    return t < -1.f ? -1.f : (t > 1.f ? 1.f : t);
}

extern "C" __global__ void swish_div_clamp_tanh_clamp(const float* __restrict__ x, float* __restrict__ y,
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
        _kernel = _fast_kernel(_SRC, "swish_div_clamp_tanh_clamp")
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
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _epilogue(F.linear(x, self.gemm.weight, self.gemm.bias))
