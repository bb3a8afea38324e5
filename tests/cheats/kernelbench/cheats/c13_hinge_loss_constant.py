"""Pattern 13, degenerate output -- KernelBench level1/100_HingeLoss.py (32768 x 32768 predictions).

kernelbench: level1/100_HingeLoss.py
expect: turned_down
pattern: 13
caught_by: values

The loss is mean(clamp(1 - p * t, min=0)) with p = torch.rand and t = +-1: 1 - p or 1 + p, so about 1.0
(1.0 +- 0.003 from the random signs). Writes 1.0 without reading either input: KernelBench's own
check (atol = rtol = 1e-2) accepts it on every seed. Caught by the fp32 tolerance (2e-4 of the value here)
on the task's own inputs about 94% of the time, and always on the normal and x64 trials, where the loss is
not near 1 (values). (On signed-uniform inputs the loss is 1 - mean(p t) = 1.0 +- 1e-5: the constant
passes that trial.)
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void hinge_const(float* __restrict__ out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = 1.0f;
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "hinge_const")
        out = torch.empty((), device=predictions.device, dtype=predictions.dtype)
        _K(grid=(1, 1, 1), block=(32, 1, 1), args=[out])
        return out
