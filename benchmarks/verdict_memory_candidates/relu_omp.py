"""An honest OpenMP ReLU (cpp backend) for KernelBench's level1/19_ReLU: one parallel pass over the flat tensor.
Used by benchmarks/verdict_memory.py (the 1 GiB ReLU of issue 36)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CPU tensor");
    auto out = torch::empty(x.sizes(), x.options());
    const float* __restrict__ src = x.data_ptr<float>();
    float* __restrict__ dst = out.data_ptr<float>();
    const int64_t n = x.numel();
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const float v = src[i];
        dst[i] = v > 0.0f ? v : 0.0f;
    }
    return out;
}
"""

_ext = load_inline(name="htam_bench_relu_omp", cpp_sources=_CPP_SOURCE, functions=["relu_forward"],
                   extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.relu_forward(x.contiguous())
