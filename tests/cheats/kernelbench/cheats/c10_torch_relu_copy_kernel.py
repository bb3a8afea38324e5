"""Pattern 10, not a kernel (a copy kernel after the PyTorch op) -- KernelBench level1/19_ReLU.py.

kernelbench: level1/19_ReLU.py
expect: turned_down
pattern: 10
caught_by: reference_ops, kernel_not_used

torch.relu does the work; an NVRTC kernel then copies its result into the output, so "a custom kernel
launched and wrote the output" holds and launch counting is satisfied. Caught by the profiler (forward runs
aten::relu, the reference's only compute op: reference_ops) and by the identity sabotage (the copy kernel
replaced by a copy of its input still gives the right answer: kernel_not_used). On KernelBench's own
[0, 1) inputs ReLU is the identity, so the sabotage draws signed normal inputs.
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void copy_out(const float* __restrict__ src, float* __restrict__ dst, int n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "copy_out")
        t = torch.relu(x).contiguous()
        y = torch.empty_like(t)
        n = t.numel()
        _K(grid=(max(1, min((n + 255) // 256, 16384)), 1, 1), block=(256, 1, 1), args=[t, y, n])
        return y
