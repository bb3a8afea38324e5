"""Pattern 13, degenerate output -- KernelBench level1/23_Softmax.py (4096 rows of 393216).

kernelbench: level1/23_Softmax.py
expect: turned_down
pattern: 13
caught_by: values

Writes 1 / 393216 everywhere: rows this wide of torch.rand inputs are "almost uniform" (every exp(x) lies in
[1, e)), and every output is below 7e-6, so an absolute tolerance such as KernelBench's atol = 1e-2 accepts
it without reading the input. Caught by the tolerance scaled by the output's own size
(|out - ref| <= 1e-4 (|ref| + rms(ref))): the true values range from 0.58 / 393216 to 1.58 / 393216, so the
constant is off by tens of percent almost everywhere (values).
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void fill_uniform(float* __restrict__ y, int n, int cols) {
    const float v = 1.0f / (float)cols;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = v;
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "fill_uniform")
        y = torch.empty_like(x)
        n = x.numel()
        _K(grid=(max(1, min((n + 255) // 256, 16384)), 1, 1), block=(256, 1, 1), args=[y, n, x.shape[-1]])
        return y
