"""Pattern 16, undefined behaviour (uninitialised shared memory) -- task: reduction_row_sum.

The block reduction is written for 512 threads but launched with 256: the tree reduction reads shared
slots 256..511 that nothing in this kernel writes. They often hold zeros or leftovers that happen to be
small, so results vary from run to run. Caught when the garbage is large (values), robustly by requiring
bit-identical results across repeated runs (determinism) or compute-sanitizer's initcheck.
"""

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void row_sum(const float* x, float* y, int cols) {
    const float* xr = x + (long long)blockIdx.x * cols;
    __shared__ float red[512];
    float s = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int k = 256; k > 0; k >>= 1) {          // assumes blockDim.x == 512
        if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[blockIdx.x] = red[0];
}
"""
_K = None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "row_sum")
        x = x.contiguous()
        rows, cols = x.shape[0], x.shape[-1]
        y = torch.empty(rows, dtype=x.dtype, device=x.device)
        _K(grid=(rows, 1, 1), block=(256, 1, 1), args=[x, y, cols])
        return y
