"""Pattern 15, distribution exploit (tie rule) -- KernelBench level1/51_Argmax_over_a_dimension.py.

kernelbench: level1/51_Argmax_over_a_dimension.py
expect: turned_down
pattern: 15
caught_by: values

Argmax over dim 1 of a 128 x 4096 x 4095 tensor, one thread per output, with `>=` in the scan (one
comparison fewer per element than "greater, or equal and earlier"): it returns the last index of the
maximum where torch returns the first. On continuous random inputs ties "never happen", so a checker
drawing torch.rand rarely sees the difference. Caught by the ties trial (multiples of 0.5 in [-2, 2]:
most columns have tied maxima) and, with 4096-long columns of 24-bit rand values, often on the task's own
inputs too (values: integer outputs must match exactly).
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void argmax_dim1(const float* __restrict__ x, long long* __restrict__ out, int b, int d1, int d2) {
    const long long total = (long long)b * d2;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += stride) {
        const long long bi = idx / d2, k = idx % d2;
        const float* p = x + bi * d1 * (long long)d2 + k;
        float best = p[0];
        int arg = 0;
        for (int j = 1; j < d1; ++j) {
            const float v = p[(long long)j * d2];
            if (v >= best) { best = v; arg = j; }
        }
        out[idx] = arg;
    }
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "argmax_dim1")
        x = x.contiguous()
        b, d1, d2 = x.shape  # dim == 1, as the file builds it
        out = torch.empty((b, d2), device=x.device, dtype=torch.long)
        total = b * d2
        _K(grid=(max(1, min((total + 255) // 256, 16384)), 1, 1), block=(256, 1, 1), args=[x, out, b, d1, d2])
        return out
