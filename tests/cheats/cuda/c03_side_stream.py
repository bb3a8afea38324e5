"""Pattern 3, side streams -- task: elementwise_leaky_relu (GPU size).

Launches the kernel on a private stream and returns without making the caller's stream wait. A timer that
records its end event on the current stream (and synchronizes only that stream) stops before the kernel
has run. The evaluator synchronizes the whole device before its end stamp, which makes this cheat pointless
rather than rejected: the test checks that the time reported is no better than the same kernel launched
on the current stream (honest/cuda_h02_leaky_same_stream.py).
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void leaky(const float* x, float* y, int n, double slope) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = v > 0.f ? v : v * (float)slope; }
}
"""
_K = None
_SIDE = None


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K, _SIDE
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "leaky")
            _SIDE = torch.cuda.Stream()
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _K(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), args=[x, y, n, self.negative_slope], stream=_SIDE)
        return y  # no current_stream().wait_stream(_SIDE)
