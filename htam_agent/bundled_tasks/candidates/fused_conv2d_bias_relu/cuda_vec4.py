"""Conv2d + bias + ReLU in CUDA: the convolution (no bias) stays in PyTorch/cuDNN; our kernel fuses both
bias adds (the conv's own bias and the extra per-channel bias) and the ReLU into one pass, float4 when
H*W is a multiple of 4 and pointers are aligned (a float4 then stays inside one channel plane)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

_CPP_DECL = "torch::Tensor bias_relu_forward(torch::Tensor y, torch::Tensor conv_bias, torch::Tensor bias);"

_CUDA_SOURCE = r"""
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <algorithm>
#include <cstdint>

__device__ __forceinline__ float bias_relu(float v, float b) {
    const float r = v + b;
    return r < 0.0f ? 0.0f : r;
}

// The two biases are added one after the other, keeping the reference rounding order (y + b1) + b2.
__global__ void bias_relu_vec4_kernel(const float4* __restrict__ y, const float* __restrict__ b1,
                                      const float* __restrict__ b2, float4* __restrict__ out,
                                      int64_t n4, int64_t hw4, int64_t C) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const int64_t c = (i / hw4) % C;
        const float a = b1[c], b = b2[c];
        float4 v = y[i];
        v.x = bias_relu(v.x + a, b);
        v.y = bias_relu(v.y + a, b);
        v.z = bias_relu(v.z + a, b);
        v.w = bias_relu(v.w + a, b);
        out[i] = v;
    }
}

__global__ void bias_relu_scalar_kernel(const float* __restrict__ y, const float* __restrict__ b1,
                                        const float* __restrict__ b2, float* __restrict__ out,
                                        int64_t n, int64_t hw, int64_t C) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const int64_t c = (i / hw) % C;
        out[i] = bias_relu(y[i] + b1[c], b2[c]);
    }
}

static bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

torch::Tensor bias_relu_forward(torch::Tensor y, torch::Tensor conv_bias, torch::Tensor bias) {
    for (const auto& t : {y, conv_bias, bias}) {
        TORCH_CHECK(t.is_cuda(), "tensors must be CUDA tensors");
        TORCH_CHECK(t.scalar_type() == torch::kFloat32, "tensors must be float32");
        TORCH_CHECK(t.is_contiguous(), "tensors must be contiguous");
    }
    TORCH_CHECK(y.dim() == 4, "y must be NCHW");
    const int64_t C = y.size(1), hw = y.size(2) * y.size(3);
    TORCH_CHECK(conv_bias.numel() == C && bias.numel() == C, "biases must have one value per channel");
    const c10::cuda::CUDAGuard guard(y.device());
    auto out = torch::empty(y.sizes(), y.options());
    const int64_t n = y.numel();
    if (n == 0) return out;
    const float* yp = y.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const float* b1 = conv_bias.data_ptr<float>();
    const float* b2 = bias.data_ptr<float>();
    const int threads = 256;
    const int64_t cap = 65535LL * 16;
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    if (hw % 4 == 0 && aligned16(yp) && aligned16(op)) {
        const int64_t n4 = n / 4;
        const int64_t blocks = std::min((n4 + threads - 1) / threads, cap);
        bias_relu_vec4_kernel<<<(unsigned int)blocks, threads, 0, stream>>>(
            reinterpret_cast<const float4*>(yp), b1, b2, reinterpret_cast<float4*>(op), n4, hw / 4, C);
    } else {
        const int64_t blocks = std::min((n + threads - 1) / threads, cap);
        bias_relu_scalar_kernel<<<(unsigned int)blocks, threads, 0, stream>>>(yp, b1, b2, op, n, hw, C);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="htam_fused_conv2d_bias_relu_cuda_vec4",
    cpp_sources=_CPP_DECL,
    cuda_sources=_CUDA_SOURCE,
    functions=["bias_relu_forward"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias_shape: tuple):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = self.conv
        y = F.conv2d(x, c.weight, None, c.stride, c.padding, c.dilation, c.groups)  # conv without bias
        return _ext.bias_relu_forward(y.contiguous(), c.bias.contiguous(), self.bias.contiguous().view(-1))
