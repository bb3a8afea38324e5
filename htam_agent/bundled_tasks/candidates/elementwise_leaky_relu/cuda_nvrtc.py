"""LeakyReLU as a plain CUDA kernel compiled by NVRTC (torch.cuda._compile_kernel), float4 where aligned.

The slope is baked into the source as a constant (one compiled kernel per slope value, cached), so no
Python float crosses the launcher; element counts are passed as 32-bit ints, so huge tensors are processed in
chunks of 2**30 elements.
"""

import torch
import torch.nn as nn

_SOURCE_TEMPLATE = r"""
extern "C" __global__ void leaky_relu_f32(const float* __restrict__ x, float* __restrict__ y, int n) {
    const float s = (float)(SLOPE);
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // a group of 4 elements
    const long long base = g * 4;
    if (base >= n) return;
    const bool aligned = ((((unsigned long long)x) | ((unsigned long long)y)) & 15ull) == 0;
    if (aligned && base + 4 <= n) {
        float4 v = reinterpret_cast<const float4*>(x)[g];
        v.x = v.x < 0.0f ? v.x * s : v.x;
        v.y = v.y < 0.0f ? v.y * s : v.y;
        v.z = v.z < 0.0f ? v.z * s : v.z;
        v.w = v.w < 0.0f ? v.w * s : v.w;
        reinterpret_cast<float4*>(y)[g] = v;
    } else {
        const long long end = base + 4 < n ? base + 4 : (long long)n;
        for (long long i = base; i < end; ++i) {
            const float v = x[i];
            y[i] = v < 0.0f ? v * s : v;
        }
    }
}
"""

_KERNELS: dict = {}
_CHUNK = 1 << 30
_THREADS = 256


def _kernel(slope: float):
    key = float(slope)
    if key not in _KERNELS:
        source = _SOURCE_TEMPLATE.replace("SLOPE", repr(key))
        _KERNELS[key] = torch.cuda._compile_kernel(source, "leaky_relu_f32")
    return _KERNELS[key]


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (x.is_cuda and x.dtype == torch.float32):
            raise ValueError("x must be a float32 CUDA tensor")
        x = x.contiguous()
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
        kernel = _kernel(self.negative_slope)
        flat_x, flat_y = x.view(-1), out.view(-1)
        n = flat_x.numel()
        for start in range(0, n, _CHUNK):
            count = min(_CHUNK, n - start)
            groups = (count + 3) // 4
            blocks = (groups + _THREADS - 1) // _THREADS
            kernel(
                grid=(blocks, 1, 1),
                block=(_THREADS, 1, 1),
                args=[flat_x[start : start + count], flat_y[start : start + count], count],
            )
        return out
