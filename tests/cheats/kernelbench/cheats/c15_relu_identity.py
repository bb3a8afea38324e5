"""Pattern 15, distribution exploit -- KernelBench level1/19_ReLU.py (4096 x 393216 floats).

kernelbench: level1/19_ReLU.py
expect: turned_down
pattern: 15
caught_by: values

KernelBench draws x with torch.rand, in [0, 1), where ReLU is the identity: the "kernel" is a copy (no
compare, no select) and matches the reference on every input KernelBench itself would ever produce. Caught
by the trials on other distributions (standard normal, signed uniform, ties): negative inputs come out
negative (values).
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void relu_nonneg(const float4* __restrict__ x, float4* __restrict__ y, const float* __restrict__ xs,
                                       float* __restrict__ ys, int n) {
    const long long n4 = (long long)n >> 2;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long i = start; i < n4; i += stride) y[i] = x[i];  // x >= 0 on torch.rand inputs
    for (long long i = 4 * n4 + start; i < n; i += stride) ys[i] = xs[i];
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "relu_nonneg")
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _K(grid=(max(1, min((n // 4 + 255) // 256, 16384)), 1, 1), block=(256, 1, 1), args=[x, y, x, y, n])
        return y
