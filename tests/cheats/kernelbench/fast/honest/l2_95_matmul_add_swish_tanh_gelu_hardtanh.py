"""Matmul_Add_Swish_Tanh_GELU_Hardtanh (KernelBench level 2): GEMM in PyTorch, epilogue in one NVRTC kernel.

kernelbench: level2/95_Matmul_Add_Swish_Tanh_GELU_Hardtanh.py
expect: accepted

t = x @ W^T + b + add_value; t = sigmoid(t) * t; t = tanh(t); t = exact (erf) GELU(t); y = clamp(t, -1, 1).
The GEMM is F.linear with the module's own nn.Linear parameters, and add_value is the module's own parameter
(all created as the reference creates them, same names, so the evaluator's weights are the reference's). The
kernel walks the GEMM output as (rows, cols): blockIdx.y strides over the rows, the threads over the columns
(float4 when the row width and the pointers allow), so the add_value index is the column itself and no
division is needed. The row count arrives as a double.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

# <<FAST_CUDA_LAUNCHER>>

_SRC = r"""
__device__ __forceinline__ float epilogue(float v, float b) {
    float t = v + b;
    t = (1.f / (1.f + expf(-t))) * t;
    t = tanhf(t);
    t = 0.5f * t * (1.f + erff(t * 0.70710678118654752f));
    return t < -1.f ? -1.f : (t > 1.f ? 1.f : t);
}

extern "C" __global__ void add_swish_tanh_gelu_hardtanh(const float* __restrict__ x,
                                                        const float* __restrict__ b, float* __restrict__ y,
                                                        double rows_d, int cols) {
    const long long rows = (long long)rows_d;
    const bool vec = (cols & 3) == 0
        && (((unsigned long long)x | (unsigned long long)b | (unsigned long long)y) & 15ULL) == 0ULL;
    const int c0 = blockIdx.x * blockDim.x + threadIdx.x, cstride = gridDim.x * blockDim.x;
    for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
        const long long base = r * cols;
        if (vec) {
            const float4* x4 = reinterpret_cast<const float4*>(x + base);
            const float4* b4 = reinterpret_cast<const float4*>(b);
            float4* y4 = reinterpret_cast<float4*>(y + base);
            for (int c = c0; c < (cols >> 2); c += cstride) {
                float4 v = x4[c];
                const float4 bb = b4[c];
                v.x = epilogue(v.x, bb.x);
                v.y = epilogue(v.y, bb.y);
                v.z = epilogue(v.z, bb.z);
                v.w = epilogue(v.w, bb.w);
                y4[c] = v;
            }
        } else {
            for (int c = c0; c < cols; c += cstride) y[base + c] = epilogue(x[base + c], b[c]);
        }
    }
}
"""
_kernel = None


def _get_kernel():
    global _kernel
    if _kernel is None:
        _kernel = _fast_kernel(_SRC, "add_swish_tanh_gelu_hardtanh")
    return _kernel


def _column_bias(bias: torch.Tensor, cols: int, ndim: int) -> torch.Tensor:
    """The added parameter as `cols` contiguous values, when it broadcasts along the last dimension only."""
    if bias.dim() == 0 or (bias.dim() <= ndim and all(s == 1 for s in bias.shape[:-1])
                           and bias.shape[-1] in (1, cols)):
        return bias.reshape(-1).expand(cols).contiguous()
    raise ValueError(f"add_value of shape {tuple(bias.shape)}: this kernel adds along the last dimension "
                     "only")


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, add_value_shape):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.add_value = nn.Parameter(torch.randn(add_value_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.linear(x, self.matmul.weight, self.matmul.bias).contiguous()
        if h.dtype != torch.float32 or self.add_value.dtype != torch.float32:
            raise TypeError("this kernel is written for float32")
        y = torch.empty_like(h)
        cols = h.shape[-1] if h.dim() else 1
        if h.numel() == 0:
            return y
        b = _column_bias(self.add_value.detach(), cols, h.dim())
        rows = h.numel() // cols
        gx = max(1, min((cols + 1023) // 1024, 256))
        gy = max(1, min(rows, 65535, 4096 // gx))
        _get_kernel()(grid=(gx, gy, 1), block=(256, 1, 1), args=[h, b, y, float(rows), cols])
        return y
