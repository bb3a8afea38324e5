"""fp32 matmul on the CPU: cache-blocked (64 x 256 x 128) loops, OpenMP over the (row-block, col-block)
tiles of C, an i-k-j inner order so the innermost loop is a vectorised axpy over a row of B."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>
#include <algorithm>

torch::Tensor matmul_forward(torch::Tensor A, torch::Tensor B) {
    for (const auto& t : {A, B}) {
        TORCH_CHECK(t.device().is_cpu(), "tensors must be on the CPU");
        TORCH_CHECK(t.scalar_type() == torch::kFloat32, "tensors must be float32");
        TORCH_CHECK(t.is_contiguous(), "tensors must be contiguous");
        TORCH_CHECK(t.dim() == 2, "tensors must be 2-D");
    }
    TORCH_CHECK(A.size(1) == B.size(0), "inner dimensions must match");
    const int64_t M = A.size(0), K = A.size(1), N = B.size(1);
    auto C = torch::zeros({M, N}, A.options());
    const float* __restrict__ a = A.data_ptr<float>();
    const float* __restrict__ b = B.data_ptr<float>();
    float* __restrict__ c = C.data_ptr<float>();
    constexpr int64_t BM = 64, BN = 256, BK = 128;
    #pragma omp parallel for collapse(2) schedule(static)
    for (int64_t i0 = 0; i0 < M; i0 += BM) {
        for (int64_t j0 = 0; j0 < N; j0 += BN) {
            const int64_t i1 = std::min(i0 + BM, M), j1 = std::min(j0 + BN, N);
            for (int64_t k0 = 0; k0 < K; k0 += BK) {
                const int64_t k1 = std::min(k0 + BK, K);
                for (int64_t i = i0; i < i1; ++i) {
                    float* __restrict__ crow = c + i * N;
                    for (int64_t k = k0; k < k1; ++k) {
                        const float av = a[i * K + k];
                        const float* __restrict__ brow = b + k * N;
                        #pragma omp simd
                        for (int64_t j = j0; j < j1; ++j) crow[j] += av * brow[j];
                    }
                }
            }
        }
    }
    return C;
}
"""

_ext = load_inline(
    name="htam_matmul_square_cpp_blocked",
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
