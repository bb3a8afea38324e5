"""Conv2d + bias + ReLU on the CPU: the convolution (no bias) stays in PyTorch; our OpenMP kernel fuses
both bias adds (the conv's own bias and the extra per-channel bias) and the ReLU into one pass."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor bias_relu_forward(torch::Tensor y, torch::Tensor conv_bias, torch::Tensor bias) {
    for (const auto& t : {y, conv_bias, bias}) {
        TORCH_CHECK(t.device().is_cpu(), "tensors must be on the CPU");
        TORCH_CHECK(t.scalar_type() == torch::kFloat32, "tensors must be float32");
        TORCH_CHECK(t.is_contiguous(), "tensors must be contiguous");
    }
    TORCH_CHECK(y.dim() == 4, "y must be NCHW");
    const int64_t N = y.size(0), C = y.size(1), HW = y.size(2) * y.size(3);
    TORCH_CHECK(conv_bias.numel() == C && bias.numel() == C, "biases must have one value per channel");
    auto out = torch::empty(y.sizes(), y.options());
    const float* __restrict__ src = y.data_ptr<float>();
    const float* __restrict__ cb = conv_bias.data_ptr<float>();
    const float* __restrict__ eb = bias.data_ptr<float>();
    float* __restrict__ dst = out.data_ptr<float>();
    #pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = 0; c < C; ++c) {
            const int64_t off = (n * C + c) * HW;
            const float b1 = cb[c], b2 = eb[c];
            #pragma omp simd
            for (int64_t i = 0; i < HW; ++i) {
                const float v = (src[off + i] + b1) + b2;
                dst[off + i] = v < 0.0f ? 0.0f : v;
            }
        }
    }
    return out;
}
"""

_ext = load_inline(
    name="htam_fused_conv2d_bias_relu_cpp_omp",
    cpp_sources=_CPP_SOURCE,
    functions=["bias_relu_forward"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
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
