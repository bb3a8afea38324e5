"""Honest look-alike (GPU): cuBLAS GEMM through torch, our NVRTC kernel for bias + exact GELU -- task:
fused_gemm_bias_gelu.

torch.matmul(x, W^T) without bias (aten::mm, not the reference's linear/addmm), then one NVRTC pass that
adds the bias and applies erf-GELU. Must be accepted.
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void bias_gelu(const float* y, const float* b, float* out, int n, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = y[i] + b[i % cols];
        out[i] = 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
    }
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "bias_gelu")
        y = torch.matmul(x, self.linear.weight.t()).contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        _K(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), args=[y, self.linear.bias.contiguous(), out, n, y.shape[-1]])
        return out
