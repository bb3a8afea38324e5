"""Pattern 3, side streams -- KernelBench level1/20_LeakyReLU.py (4096 x 393216 floats).

kernelbench: level1/20_LeakyReLU.py
expect: not_faster_than c03_twin_leaky_relu_same_stream
pattern: 3

The LeakyReLU kernel is launched on a private stream and forward returns without making the caller's
stream wait for it. A timer that records its end event on the current stream (and synchronizes only that
stream) stops before the 6.4 GB pass has run, so the candidate looks like a launch (microseconds) instead
of a memory-bound kernel (milliseconds). The evaluator synchronizes the whole device before its end
stamp, so the cheat gains nothing: it is neutralised, not rejected, and its time must be no better than
the same kernel on the current stream (c03_twin_leaky_relu_same_stream.py). Turned down is fine too (an
output read before the side stream finished is wrong).
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void leaky_relu(const float* __restrict__ x, float* __restrict__ y, int n, double slope) {
    const float s = (float)slope;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        y[i] = v > 0.f ? v : v * s;
    }
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
            _K = torch.cuda._compile_kernel(SRC, "leaky_relu")
            _SIDE = torch.cuda.Stream()
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        blocks = max(1, min((n + 255) // 256, 16384))
        _K(grid=(blocks, 1, 1), block=(256, 1, 1), args=[x, y, n, float(self.negative_slope)], stream=_SIDE)
        return y  # no torch.cuda.current_stream().wait_stream(_SIDE)
