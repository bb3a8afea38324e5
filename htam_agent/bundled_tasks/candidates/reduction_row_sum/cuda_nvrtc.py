"""Row sum as a plain CUDA kernel compiled by NVRTC (torch.cuda._compile_kernel): one 256-thread block per
row, float4 loads when the row is aligned, warp-shuffle reduction. Compiled once, on the first forward."""

import torch
import torch.nn as nn

_SOURCE = r"""
extern "C" __global__ void row_sum_f32(const float* __restrict__ x, float* __restrict__ y, int cols) {
    const float* row = x + (long long)blockIdx.x * cols;
    float acc = 0.0f;
    const bool vec = ((cols & 3) == 0) && ((((unsigned long long)row) & 15ull) == 0);
    if (vec) {
        const float4* row4 = reinterpret_cast<const float4*>(row);
        const int n4 = cols >> 2;
        for (int i = threadIdx.x; i < n4; i += blockDim.x) {
            const float4 v = row4[i];
            acc += (v.x + v.y) + (v.z + v.w);
        }
    } else {
        for (int i = threadIdx.x; i < cols; i += blockDim.x) acc += row[i];
    }
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    __shared__ float partial[32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (int)(blockDim.x >> 5) ? partial[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
        if (lane == 0) y[blockIdx.x] = acc;
    }
}
"""

_KERNEL = None
_THREADS = 256
_MAX_ROWS_PER_LAUNCH = 1 << 30


def _kernel():
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = torch.cuda._compile_kernel(_SOURCE, "row_sum_f32")
    return _KERNEL


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (x.is_cuda and x.dtype == torch.float32 and x.dim() >= 1):
            raise ValueError("x must be a float32 CUDA tensor with at least one dimension")
        x = x.contiguous()
        cols = x.shape[-1]
        if cols >= 2**31:
            raise ValueError("rows longer than 2**31 - 1 elements are not supported")
        out = torch.empty(x.shape[:-1], device=x.device, dtype=x.dtype)
        rows = out.numel()
        if rows == 0:
            return out
        if cols == 0:
            return out.zero_()
        x2, y = x.view(rows, cols), out.view(rows)
        kernel = _kernel()
        for start in range(0, rows, _MAX_ROWS_PER_LAUNCH):
            count = min(_MAX_ROWS_PER_LAUNCH, rows - start)
            kernel(grid=(count, 1, 1), block=(_THREADS, 1, 1), args=[x2[start : start + count], y[start : start + count], cols])
        return out
