"""Pattern 12, hard-coded shapes (no tail) -- KernelBench level1/19_ReLU.py (4096 x 393216 floats).

kernelbench: level1/19_ReLU.py
expect: turned_down
pattern: 12
caught_by: other_shape:values, other_shape:nan_or_inf

A float4 ReLU that handles numel / 4 vectors and no remainder: right whenever numel is a multiple of 4,
which 4096 x 393216 (and the derived small size, 2048 x 1536) is. KernelBench's file has no size dicts;
the evaluator derives a second shape with odd sizes (2047 x 1535: numel % 4 == 1), where the last element
is never written (other_shape:values or other_shape:nan_or_inf). Reads stay in bounds at every size.
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void relu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int n) {
    const long long n4 = (long long)n >> 2;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
        v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
        y[i] = v;
    }
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "relu_vec4")
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _K(grid=(max(1, min((n // 4 + 255) // 256, 16384)), 1, 1), block=(256, 1, 1), args=[x, y, n])
        return y
