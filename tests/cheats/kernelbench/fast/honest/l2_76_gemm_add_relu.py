"""Gemm_Add_ReLU (KernelBench level 2): GEMM in PyTorch, bias add and ReLU in one NVRTC kernel.

kernelbench: level2/76_Gemm_Add_ReLU.py
expect: accepted

y = relu(x @ W^T + bias). The GEMM is F.linear with the module's own bias-free nn.Linear weight, and the bias
is the module's own parameter (both created as the reference creates them, same names, so the evaluator's
weights are the reference's). The kernel walks the GEMM output as (rows, cols): blockIdx.y strides over the
rows, the threads over the columns (float4 when the row width and the pointers allow), so the bias index is
the column itself and no division is needed. The row count arrives as a double.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

# <<FAST_CUDA_LAUNCHER>>

_SRC = r"""
__device__ __forceinline__ float epilogue(float v, float b) {
    const float t = v + b;
    return t < 0.f ? 0.f : t;
}

extern "C" __global__ void add_relu(const float* __restrict__ x, const float* __restrict__ b,
                                    float* __restrict__ y, double rows_d, int cols) {
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
        _kernel = _fast_kernel(_SRC, "add_relu")
    return _kernel


def _column_bias(bias: torch.Tensor, cols: int, ndim: int) -> torch.Tensor:
    """The bias as `cols` contiguous values, when it broadcasts along the last dimension only."""
    if bias.dim() == 0 or (bias.dim() <= ndim and all(s == 1 for s in bias.shape[:-1])
                           and bias.shape[-1] in (1, cols)):
        return bias.reshape(-1).expand(cols).contiguous()
    raise ValueError(f"bias of shape {tuple(bias.shape)}: this kernel adds a bias along the last dimension "
                     "only")


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.linear(x, self.gemm.weight).contiguous()
        if h.dtype != torch.float32 or self.bias.dtype != torch.float32:
            raise TypeError("this kernel is written for float32")
        y = torch.empty_like(h)
        cols = h.shape[-1] if h.dim() else 1
        if h.numel() == 0:
            return y
        b = _column_bias(self.bias.detach(), cols, h.dim())
        rows = h.numel() // cols
        gx = max(1, min((cols + 1023) // 1024, 256))
        gy = max(1, min(rows, 65535, 4096 // gx))
        _get_kernel()(grid=(gx, gy, 1), block=(256, 1, 1), args=[h, b, y, float(rows), cols])
        return y
