"""Linear + exact GELU on the CPU: the GEMM (x @ W^T, no bias) stays in PyTorch; our OpenMP kernel fuses
the bias add and the erf GELU into one pass over the GEMM output."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor bias_gelu_forward(torch::Tensor y, torch::Tensor bias) {
    for (const auto& t : {y, bias}) {
        TORCH_CHECK(t.device().is_cpu(), "tensors must be on the CPU");
        TORCH_CHECK(t.scalar_type() == torch::kFloat32, "tensors must be float32");
        TORCH_CHECK(t.is_contiguous(), "tensors must be contiguous");
    }
    TORCH_CHECK(y.dim() >= 1, "y must have at least one dimension");
    const int64_t cols = y.size(-1);
    TORCH_CHECK(bias.numel() == cols, "bias must have size y.size(-1)");
    auto out = torch::empty(y.sizes(), y.options());
    if (y.numel() == 0) return out;
    const int64_t rows = y.numel() / cols;
    const float* __restrict__ src = y.data_ptr<float>();
    const float* __restrict__ b = bias.data_ptr<float>();
    float* __restrict__ dst = out.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* __restrict__ p = src + r * cols;
        float* __restrict__ q = dst + r * cols;
        for (int64_t j = 0; j < cols; ++j) {
            const float v = p[j] + b[j];
            q[j] = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
        }
    }
    return out;
}
"""

_ext = load_inline(
    name="htam_fused_gemm_bias_gelu_cpp_omp",
    cpp_sources=_CPP_SOURCE,
    functions=["bias_gelu_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.linear.weight.t())  # GEMM without bias; bias + GELU are our kernel
        return _ext.bias_gelu_forward(y.contiguous(), self.linear.bias.contiguous())
