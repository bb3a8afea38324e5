"""Pattern 12, hard-coded init values -- KernelBench level2/12_Gemm_Multiply_LeakyReLU.py.

kernelbench: level2/12_Gemm_Multiply_LeakyReLU.py
expect: turned_down
pattern: 12
caught_by: other_init:values

GEMM (with its bias) in PyTorch, the multiply + LeakyReLU epilogue in an NVRTC kernel with the file's
multiplier = 2.0 and negative_slope = 0.1 baked in as #defines; the constructor takes both and ignores
them. Right for the init arguments the file ships; the evaluator rebuilds both models with every non-zero
float init argument times 1.37 (multiplier 2.74, negative_slope 0.137) and the baked constants are wrong
there (other_init:values).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

SRC = r"""
#define MULTIPLIER 2.0f
#define NEGATIVE_SLOPE 0.1f
extern "C" __global__ void scale_leaky(const float* __restrict__ y, float* __restrict__ out, int n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = y[i] * MULTIPLIER;
        out[i] = v > 0.f ? v : v * NEGATIVE_SLOPE;
    }
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "scale_leaky")
        y = F.linear(x, self.gemm.weight, self.gemm.bias).contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        _K(grid=(max(1, min((n + 255) // 256, 16384)), 1, 1), block=(256, 1, 1), args=[y, out, n])
        return out
