"""Linear + exact GELU in CUDA: the GEMM (x @ W^T, no bias) stays in PyTorch/cuBLAS; our kernel fuses the
bias add and the erf GELU into one pass, float4 when the row length is a multiple of 4 and pointers are
aligned (a float4 then never crosses a row), scalar otherwise."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_DECL = "torch::Tensor bias_gelu_forward(torch::Tensor y, torch::Tensor bias);"

_CUDA_SOURCE = r"""
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <algorithm>
#include <cstdint>

__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__global__ void bias_gelu_vec4_kernel(const float4* __restrict__ y, const float4* __restrict__ b,
                                      float4* __restrict__ out, int64_t n4, int64_t cols4) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const float4 v = y[i], bb = b[i % cols4];
        float4 o;
        o.x = gelu_erf(v.x + bb.x);
        o.y = gelu_erf(v.y + bb.y);
        o.z = gelu_erf(v.z + bb.z);
        o.w = gelu_erf(v.w + bb.w);
        out[i] = o;
    }
}

__global__ void bias_gelu_scalar_kernel(const float* __restrict__ y, const float* __restrict__ b,
                                        float* __restrict__ out, int64_t n, int64_t cols) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = gelu_erf(y[i] + b[i % cols]);
}

static bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

torch::Tensor bias_gelu_forward(torch::Tensor y, torch::Tensor bias) {
    for (const auto& t : {y, bias}) {
        TORCH_CHECK(t.is_cuda(), "tensors must be CUDA tensors");
        TORCH_CHECK(t.scalar_type() == torch::kFloat32, "tensors must be float32");
        TORCH_CHECK(t.is_contiguous(), "tensors must be contiguous");
    }
    TORCH_CHECK(y.dim() >= 1, "y must have at least one dimension");
    const int64_t cols = y.size(-1);
    TORCH_CHECK(bias.numel() == cols, "bias must have size y.size(-1)");
    const c10::cuda::CUDAGuard guard(y.device());
    auto out = torch::empty(y.sizes(), y.options());
    const int64_t n = y.numel();
    if (n == 0) return out;
    const float* yp = y.data_ptr<float>();
    const float* bp = bias.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const int threads = 256;
    const int64_t cap = 65535LL * 16;
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    if (cols % 4 == 0 && aligned16(yp) && aligned16(bp) && aligned16(op)) {
        const int64_t n4 = n / 4;
        const int64_t blocks = std::min((n4 + threads - 1) / threads, cap);
        bias_gelu_vec4_kernel<<<(unsigned int)blocks, threads, 0, stream>>>(
            reinterpret_cast<const float4*>(yp), reinterpret_cast<const float4*>(bp),
            reinterpret_cast<float4*>(op), n4, cols / 4);
    } else {
        const int64_t blocks = std::min((n + threads - 1) / threads, cap);
        bias_gelu_scalar_kernel<<<(unsigned int)blocks, threads, 0, stream>>>(yp, bp, op, n, cols);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="htam_fused_gemm_bias_gelu_cuda_vec4",
    cpp_sources=_CPP_DECL,
    cuda_sources=_CUDA_SOURCE,
    functions=["bias_gelu_forward"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.linear.weight.t())  # GEMM without bias; bias + GELU are our kernel
        return _ext.bias_gelu_forward(y.contiguous(), self.linear.bias.contiguous())
