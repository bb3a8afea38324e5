"""Conv2D_ReLU_BiasAdd (KernelBench level 2): conv in PyTorch, ReLU and channel bias in one NVRTC kernel.

kernelbench: level2/1_Conv2D_ReLU_BiasAdd.py
expect: accepted

y = relu(conv(x)) + bias, bias of shape (C, 1, 1). The convolution is the module's own nn.Conv2d and the bias
the module's own parameter (both created as the reference creates them, same names, so the evaluator's
weights are the reference's). The kernel walks the conv output as (N*C rows, H*W columns): blockIdx.y strides
over the rows, each row reading its channel's bias once, and the threads over the columns (float4 when the
row width and the pointers allow). The row count arrives as a double.
"""

import torch
import torch.nn as nn

# <<FAST_CUDA_LAUNCHER>>

_SRC = r"""
__device__ __forceinline__ float epilogue(float v, float b) { return (v < 0.f ? 0.f : v) + b; }

extern "C" __global__ void relu_channel_bias(const float* __restrict__ x, const float* __restrict__ b,
                                             float* __restrict__ y, double rows_d, int cols, int channels) {
    const long long rows = (long long)rows_d;
    const bool vec = (cols & 3) == 0 && (((unsigned long long)x | (unsigned long long)y) & 15ULL) == 0ULL;
    const int c0 = blockIdx.x * blockDim.x + threadIdx.x, cstride = gridDim.x * blockDim.x;
    for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
        const float bv = b[r % channels];
        const long long base = r * cols;
        if (vec) {
            const float4* x4 = reinterpret_cast<const float4*>(x + base);
            float4* y4 = reinterpret_cast<float4*>(y + base);
            for (int c = c0; c < (cols >> 2); c += cstride) {
                float4 v = x4[c];
                v.x = epilogue(v.x, bv);
                v.y = epilogue(v.y, bv);
                v.z = epilogue(v.z, bv);
                v.w = epilogue(v.w, bv);
                y4[c] = v;
            }
        } else {
            for (int c = c0; c < cols; c += cstride) y[base + c] = epilogue(x[base + c], bv);
        }
    }
}
"""
_kernel = None


def _get_kernel():
    global _kernel
    if _kernel is None:
        _kernel = _fast_kernel(_SRC, "relu_channel_bias")
    return _kernel


def _channel_bias(bias: torch.Tensor, h: torch.Tensor, cdim: int) -> torch.Tensor:
    """The bias as one value per channel, when it broadcasts against h along the channel dimension only."""
    channels = h.shape[cdim]
    shape = [1] * (h.dim() - bias.dim()) + list(bias.shape)
    if bias.dim() <= h.dim() and all(s == 1 for i, s in enumerate(shape) if i != cdim) \
            and shape[cdim] in (1, channels):
        return bias.reshape(-1).expand(channels).contiguous()
    raise ValueError(f"bias of shape {tuple(bias.shape)}: this kernel adds a per-channel bias only")


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv(x).contiguous()
        if h.dtype != torch.float32 or self.bias.dtype != torch.float32:
            raise TypeError("this kernel is written for float32")
        y = torch.empty_like(h)
        if h.numel() == 0:
            return y
        cdim = 1 if h.dim() == 4 else 0  # nn.Conv2d also takes an unbatched (C, H, W) input
        channels = h.shape[cdim]
        cols = h.shape[-1] * h.shape[-2]
        rows = h.numel() // cols
        b = _channel_bias(self.bias.detach(), h, cdim)
        gx = max(1, min((cols + 1023) // 1024, 256))
        gy = max(1, min(rows, 65535, 4096 // gx))
        _get_kernel()(grid=(gx, gy, 1), block=(256, 1, 1), args=[h, b, y, float(rows), cols, channels])
        return y
