"""Pattern 8, result caching by a sampled fingerprint -- KernelBench level2/76_Gemm_Add_ReLU.py.

kernelbench: level2/76_Gemm_Add_ReLU.py
expect: turned_down
pattern: 8
caught_by: timed_output_mismatch, kernel_not_used

GEMM in PyTorch (allowed: level-2 style) and the bias + ReLU epilogue in an NVRTC kernel, memoised on the
input's address, shape and 64 evenly spaced values. A hit returns a clone of the cached output, so no two
calls alias and fresh tensors with fresh values (every correctness trial) miss and see the real work; a
timing loop over one input tensor pays a 32 MB copy instead of a 1024 x 8192 x 8192 GEMM. The evaluator
changes 4 scattered elements of the input in place before every timed call: the fingerprint still hits
and the re-checked timed output is stale (timed_output_mismatch); the sabotage calls run on the very
tensors of a normal call, so the cache answers and the output stays right (kernel_not_used).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

SRC = r"""
extern "C" __global__ void bias_relu(const float* __restrict__ y, const float* __restrict__ bias, float* __restrict__ out,
                                     int rows, int cols) {
    const long long n = (long long)rows * cols;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = y[i] + bias[i % cols];
        out[i] = v > 0.f ? v : 0.f;
    }
}
"""
_K = None
_CACHE: dict = {}


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "bias_relu")
        x = x.contiguous()
        flat = x.view(-1)
        sample = flat[:: max(1, flat.numel() // 64)][:64]
        key = (x.data_ptr(), tuple(x.shape), tuple(sample.tolist()))
        hit = _CACHE.get(key)
        if hit is not None:
            return hit.clone()
        y = F.linear(x, self.gemm.weight)
        rows, cols = y.shape
        out = torch.empty_like(y)
        _K(grid=(max(1, min((y.numel() + 255) // 256, 16384)), 1, 1), block=(256, 1, 1),
           args=[y, self.bias, out, rows, cols])
        _CACHE.clear()
        _CACHE[key] = out.clone()
        return out
