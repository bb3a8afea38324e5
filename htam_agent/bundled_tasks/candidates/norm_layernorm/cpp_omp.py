"""LayerNorm over the last dimension on the CPU: OpenMP over rows, two-pass mean/variance in double,
then one normalise-and-affine pass."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    for (const auto& t : {x, weight, bias}) {
        TORCH_CHECK(t.device().is_cpu(), "tensors must be on the CPU");
        TORCH_CHECK(t.scalar_type() == torch::kFloat32, "tensors must be float32");
        TORCH_CHECK(t.is_contiguous(), "tensors must be contiguous");
    }
    TORCH_CHECK(x.dim() >= 1, "x must have at least one dimension");
    const int64_t cols = x.size(-1);
    TORCH_CHECK(weight.numel() == cols && bias.numel() == cols, "weight/bias must have size x.size(-1)");
    auto out = torch::empty(x.sizes(), x.options());
    if (x.numel() == 0) return out;
    const int64_t rows = x.numel() / cols;
    const float* __restrict__ src = x.data_ptr<float>();
    const float* __restrict__ w = weight.data_ptr<float>();
    const float* __restrict__ b = bias.data_ptr<float>();
    float* __restrict__ dst = out.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* __restrict__ p = src + r * cols;
        float* __restrict__ q = dst + r * cols;
        double s = 0.0;
        #pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < cols; ++j) s += p[j];
        const double mean = s / cols;
        double v = 0.0;
        #pragma omp simd reduction(+ : v)
        for (int64_t j = 0; j < cols; ++j) { const double d = p[j] - mean; v += d * d; }
        const float rstd = static_cast<float>(1.0 / std::sqrt(v / cols + eps));
        const float meanf = static_cast<float>(mean);
        #pragma omp simd
        for (int64_t j = 0; j < cols; ++j) q[j] = (p[j] - meanf) * rstd * w[j] + b[j];
    }
    return out;
}
"""

_ext = load_inline(
    name="htam_norm_layernorm_cpp_omp",
    cpp_sources=_CPP_SOURCE,
    functions=["layernorm_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class _LayerNormParams(nn.Module):
    """Holds `weight` and `bias` under the same names as nn.LayerNorm (state_dict keys ln.weight, ln.bias)."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = _LayerNormParams(dim, 1e-5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.layernorm_forward(
            x.contiguous(), self.ln.weight.contiguous(), self.ln.bias.contiguous(), float(self.ln.eps)
        )
