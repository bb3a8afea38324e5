"""Conv2d_Min_Tanh_Tanh (KernelBench level 2): conv in PyTorch, channel min and both tanh in one NVRTC kernel.

kernelbench: level2/25_Conv2d_Min_Tanh_Tanh.py
expect: accepted

y = tanh(tanh(min over dim 1 (channels) of conv(x))), keepdim. The convolution is the module's own nn.Conv2d
(created as the reference creates it, same attribute name, so the evaluator's weights are the reference's).
The conv output is seen as (outer = N, d = C, inner = H*W); one thread owns an output pixel and walks its C
values with stride H*W, so the threads of a warp read consecutive addresses. The minimum propagates NaN as
torch.min does. Sizes that can pass 2**31 arrive as doubles.
"""

import math

import torch
import torch.nn as nn

# <<FAST_CUDA_LAUNCHER>>

_SRC = r"""
extern "C" __global__ void min_tanh_tanh(const float* __restrict__ x, float* __restrict__ y, double outer_d,
                                         int d, double inner_d) {
    const long long outer = (long long)outer_d, inner = (long long)inner_d;
    const long long total = outer * inner;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const long long o = t / inner;
        const float* p = x + o * d * inner + (t - o * inner);
        float m = __int_as_float(0x7f800000);  // +inf
        for (int k = 0; k < d; ++k) {
            const float v = p[k * inner];
            if (v < m || v != v) m = v;
            if (m != m) break;
        }
        y[t] = tanhf(tanhf(m));
    }
}
"""
_kernel = None


def _get_kernel():
    global _kernel
    if _kernel is None:
        _kernel = _fast_kernel(_SRC, "min_tanh_tanh")
    return _kernel


def _min_tanh_tanh(h: torch.Tensor, dim: int) -> torch.Tensor:
    if h.dtype != torch.float32:
        raise TypeError(f"this kernel is written for float32, got {h.dtype}")
    h = h.contiguous()
    shape = list(h.shape)
    d = shape[dim]
    outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1:])
    y = torch.empty(shape[:dim] + [1] + shape[dim + 1:], dtype=h.dtype, device=h.device)
    if y.numel() == 0:
        return y
    if d == 0:
        raise IndexError("min over an empty dimension")
    blocks = min((outer * inner + 255) // 256, 1 << 16)
    _get_kernel()(grid=(blocks, 1, 1), block=(256, 1, 1), args=[h, y, float(outer), d, float(inner)])
    return y


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _min_tanh_tanh(self.conv(x), 1)  # dim 1, as the reference (the channels of a batched input)
