"""fp32 matmul on the CPU, deliberately naive: one thread, the textbook i-j-k triple loop
(a dot product per output with a strided walk down a column of B, no blocking, no SIMD-friendly order)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor matmul_forward(torch::Tensor A, torch::Tensor B) {
    for (const auto& t : {A, B}) {
        TORCH_CHECK(t.device().is_cpu(), "tensors must be on the CPU");
        TORCH_CHECK(t.scalar_type() == torch::kFloat32, "tensors must be float32");
        TORCH_CHECK(t.is_contiguous(), "tensors must be contiguous");
        TORCH_CHECK(t.dim() == 2, "tensors must be 2-D");
    }
    TORCH_CHECK(A.size(1) == B.size(0), "inner dimensions must match");
    const int64_t M = A.size(0), K = A.size(1), N = B.size(1);
    auto C = torch::empty({M, N}, A.options());
    const float* a = A.data_ptr<float>();
    const float* b = B.data_ptr<float>();
    float* c = C.data_ptr<float>();
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * b[k * N + j];
            c[i * N + j] = acc;
        }
    }
    return C;
}
"""

_ext = load_inline(
    name="htam_matmul_square_cpp_naive",
    cpp_sources=_CPP_SOURCE,
    functions=["matmul_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return _ext.matmul_forward(A.contiguous(), B.contiguous())
