"""Pattern 2, input mutation (GPU) -- task: elementwise_leaky_relu.

LeakyReLU written in place over the input, which is returned. Caught by clones + a pristine comparison
(input_mutation) and by the output aliasing the input (aliased_output).
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


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "leaky")
        n = x.numel()
        _K(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), args=[x, x, n, self.negative_slope])
        return x
