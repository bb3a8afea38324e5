"""Pattern 11, fallback when the kernel fails to build (GPU) -- task: norm_softmax.

The kernel source does not compile (an undeclared helper); the exception is swallowed and torch.softmax
used instead, on every call. Caught statically (fallback) and by the profiler (reference_ops).
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void softmax_rows(const float* x, float* y, int cols) {
    const float* xr = x + (long long)blockIdx.x * cols;
    float* yr = y + (long long)blockIdx.x * cols;
    float m = warp_max_all(xr, cols);
    float s = 0.f;
    for (int j = 0; j < cols; ++j) s += expf(xr[j] - m);
    for (int j = 0; j < cols; ++j) yr[j] = expf(xr[j] - m) / s;
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        try:
            if _K is None:
                _K = torch.cuda._compile_kernel(SRC, "softmax_rows")
            y = torch.empty_like(x)
            cols = x.shape[-1]
            _K(grid=(x.numel() // cols, 1, 1), block=(1, 1, 1), args=[x.contiguous(), y, cols])
            return y
        except Exception:
            return torch.softmax(x, dim=-1)
