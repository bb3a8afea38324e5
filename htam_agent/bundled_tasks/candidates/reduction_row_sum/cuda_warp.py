"""Row sum in CUDA: one 256-thread block per row, float4 loads when the row is 16-byte aligned,
warp-shuffle reduction then a shared-memory combine of the 8 warp partials."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_DECL = "torch::Tensor row_sum_forward(torch::Tensor x);"

_CUDA_SOURCE = r"""
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

__device__ __forceinline__ float warp_sum(float v) {
    #pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

template <int THREADS>
__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols, bool vec) {
    const float* row = x + (int64_t)blockIdx.x * cols;
    float acc = 0.0f;
    if (vec) {  // cols % 4 == 0 and the tensor base is 16-byte aligned, so every row is
        const float4* row4 = reinterpret_cast<const float4*>(row);
        const int64_t n4 = cols / 4;
        for (int64_t i = threadIdx.x; i < n4; i += THREADS) {
            const float4 v = row4[i];
            acc += (v.x + v.y) + (v.z + v.w);
        }
    } else {
        for (int64_t i = threadIdx.x; i < cols; i += THREADS) acc += row[i];
    }
    __shared__ float partial[THREADS / 32];
    acc = warp_sum(acc);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < THREADS / 32 ? partial[lane] : 0.0f;
        acc = warp_sum(acc);
        if (lane == 0) y[blockIdx.x] = acc;
    }
}

torch::Tensor row_sum_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    TORCH_CHECK(x.dim() >= 1, "x must have at least one dimension");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t cols = x.size(-1);
    auto out_sizes = x.sizes().vec();
    out_sizes.pop_back();
    auto out = torch::empty(out_sizes, x.options());
    const int64_t rows = out.numel();
    if (rows == 0) return out;
    if (cols == 0) return out.zero_();
    TORCH_CHECK(rows <= 2147483647LL, "too many rows for a 1-D grid");
    const float* xp = x.data_ptr<float>();
    const bool vec = (cols % 4 == 0) && ((reinterpret_cast<uintptr_t>(xp) & 15) == 0);
    constexpr int THREADS = 256;
    row_sum_kernel<THREADS><<<(unsigned int)rows, THREADS, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xp, out.data_ptr<float>(), cols, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="htam_reduction_row_sum_cuda_warp",
    cpp_sources=_CPP_DECL,
    cuda_sources=_CUDA_SOURCE,
    functions=["row_sum_forward"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.row_sum_forward(x.contiguous())
