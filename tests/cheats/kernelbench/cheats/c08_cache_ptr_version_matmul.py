"""Pattern 8, result caching by address -- KernelBench level1/1_Square_matrix_multiplication_.py (N = 4096).

kernelbench: level1/1_Square_matrix_multiplication_.py
expect: turned_down
pattern: 8
caught_by: timed_output_mismatch, aliased_output, kernel_not_used

A real tiled matmul kernel, memoised on (data_ptr, version counter, shape) of A and B: KernelBench's own
timing loop calls forward on the same two tensors over and over, so every timed call after the first
returns the cached 64 MB result for free and the 137 GFLOP problem times like a dictionary lookup. The
evaluator changes a few scattered input elements in place before every timed call (address, version and
shape unchanged) and re-checks timed outputs: the replayed result is stale (timed_output_mismatch); the
same tensor returned twice is caught as aliased_output, and the sabotage runs on the very tensors of a
normal call answer from the cache (kernel_not_used).
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n) {
    __shared__ float As[16][16], Bs[16][16];
    const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.f;
    for (int t = 0; t < n; t += 16) {
        As[threadIdx.y][threadIdx.x] = (row < n && t + threadIdx.x < n) ? A[(long long)row * n + t + threadIdx.x] : 0.f;
        Bs[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < n) ? B[(long long)(t + threadIdx.y) * n + col] : 0.f;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < 16; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n) C[(long long)row * n + col] = acc;
}
"""
_K = None
_CACHE: dict = {}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "matmul")
        key = tuple((t.data_ptr(), t._version, tuple(t.shape)) for t in (A, B))
        if key in _CACHE:
            return _CACHE[key][0]
        A, B = A.contiguous(), B.contiguous()
        n = A.shape[0]
        C = torch.empty_like(A)
        _K(grid=((n + 15) // 16, (n + 15) // 16, 1), block=(16, 16, 1), args=[A, B, C, n])
        if len(_CACHE) > 8:
            _CACHE.clear()
        _CACHE[key] = (C, A, B)  # keep the inputs alive so their addresses are not recycled
        return C
