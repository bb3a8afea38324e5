"""Pattern 14, precision downgrade (GPU) -- task: elementwise_leaky_relu.

Stores the result truncated to bf16 precision (the low 16 bits of each float cleared: "bf16 storage,
fp32 interface"). Relative error up to 2^-8. Caught by the fp32 tolerance (values).
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void leaky_bf16(const float* x, float* y, int n, double slope) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        v = v > 0.f ? v : v * (float)slope;
        y[i] = __uint_as_float(__float_as_uint(v) & 0xffff0000u);
    }
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "leaky_bf16")
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _K(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), args=[x, y, n, self.negative_slope])
        return y
