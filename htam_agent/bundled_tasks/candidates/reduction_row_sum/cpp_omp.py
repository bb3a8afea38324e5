"""Row sum on the CPU: OpenMP over rows, 16 independent float accumulators per row so the loop vectorises."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor row_sum_forward(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu(), "x must be a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    TORCH_CHECK(x.dim() >= 1, "x must have at least one dimension");
    const int64_t cols = x.size(-1);
    auto out_sizes = x.sizes().vec();
    out_sizes.pop_back();
    auto out = torch::empty(out_sizes, x.options());
    const int64_t rows = out.numel();
    const float* __restrict__ src = x.data_ptr<float>();
    float* __restrict__ dst = out.data_ptr<float>();
    constexpr int L = 16;
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* __restrict__ p = src + r * cols;
        float acc[L] = {0.0f};
        int64_t j = 0;
        for (; j + L <= cols; j += L) {
            #pragma omp simd
            for (int k = 0; k < L; ++k) acc[k] += p[j + k];
        }
        float tail = 0.0f;
        for (; j < cols; ++j) tail += p[j];
        // pairwise combine of the lanes
        for (int w = L / 2; w > 0; w /= 2)
            for (int k = 0; k < w; ++k) acc[k] += acc[k + w];
        dst[r] = acc[0] + tail;
    }
    return out;
}
"""

_ext = load_inline(
    name="htam_reduction_row_sum_cpp_omp",
    cpp_sources=_CPP_SOURCE,
    functions=["row_sum_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.row_sum_forward(x.contiguous())
