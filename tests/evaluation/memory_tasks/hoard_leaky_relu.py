"""A candidate that holds far more than its share (issue 36) -- task: elementwise_leaky_relu (small).

Its kernel is honest (the bundled OpenMP LeakyReLU), but at import it also allocates and fills a 6 GiB tensor
it never uses: nothing bounded a candidate's memory, so it was accepted, and on a shared host the kernel's OOM
killer then chose among everyone's processes. The sandbox is now capped at 4 x the task's footprint + 4 GiB
beyond what it held when capped: the allocation is refused, and the verdict is the candidate's
`out_of_memory`, naming the cap (tests/evaluation/test_memory_cap.py).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_HOARD = torch.ones(6 << 28)  # 6 GiB of float32, written: resident, never read

_CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor leaky_relu_forward(torch::Tensor x, double negative_slope) {
    auto out = torch::empty(x.sizes(), x.options());
    const float* __restrict__ src = x.data_ptr<float>();
    float* __restrict__ dst = out.data_ptr<float>();
    const int64_t n = x.numel();
    const float slope = static_cast<float>(negative_slope);
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const float v = src[i];
        dst[i] = v < 0.0f ? v * slope : v;
    }
    return out;
}
"""

_ext = load_inline(name="htam_elementwise_leaky_relu_cpp_omp", cpp_sources=_CPP_SOURCE,
                   functions=["leaky_relu_forward"], extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.leaky_relu_forward(x.contiguous(), float(self.negative_slope))
