"""RMSNorm in CUDA: one 512-thread block per row, a sum-of-squares pass (float4 when aligned) with a
warp-shuffle + shared-memory reduction, then one pass writing x * rsqrt(mean + eps) * weight.
One kernel instead of eager's five (mul, mean, add, rsqrt, two muls)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_DECL = "torch::Tensor rmsnorm_forward(torch::Tensor x, torch::Tensor weight, double eps);"

_CUDA_SOURCE = r"""
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cstdint>

__device__ __forceinline__ float warp_sum(float v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <int THREADS>
__global__ void rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                               float* __restrict__ y, int64_t cols, float eps, bool vec) {
    const int64_t off = (int64_t)blockIdx.x * cols;
    const float* xr = x + off;
    float* yr = y + off;
    float ss = 0.0f;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int64_t i = threadIdx.x; i < cols / 4; i += THREADS) {
            const float4 v = x4[i];
            ss += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
        }
    } else {
        for (int64_t i = threadIdx.x; i < cols; i += THREADS) ss += xr[i] * xr[i];
    }
    ss = warp_sum(ss);
    __shared__ float part[THREADS / 32];
    __shared__ float row_rinv;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) part[warp] = ss;
    __syncthreads();
    if (warp == 0) {
        ss = warp_sum(lane < THREADS / 32 ? part[lane] : 0.0f);
        if (lane == 0) row_rinv = rsqrtf(ss / (float)cols + eps);
    }
    __syncthreads();
    const float rinv = row_rinv;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        const float4* w4 = reinterpret_cast<const float4*>(w);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (int64_t i = threadIdx.x; i < cols / 4; i += THREADS) {
            const float4 v = x4[i], ww = w4[i];
            float4 o;
            o.x = v.x * rinv * ww.x;
            o.y = v.y * rinv * ww.y;
            o.z = v.z * rinv * ww.z;
            o.w = v.w * rinv * ww.w;
            y4[i] = o;
        }
    } else {
        for (int64_t i = threadIdx.x; i < cols; i += THREADS) yr[i] = xr[i] * rinv * w[i];
    }
}

static bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

torch::Tensor rmsnorm_forward(torch::Tensor x, torch::Tensor weight, double eps) {
    for (const auto& t : {x, weight}) {
        TORCH_CHECK(t.is_cuda(), "tensors must be CUDA tensors");
        TORCH_CHECK(t.scalar_type() == torch::kFloat32, "tensors must be float32");
        TORCH_CHECK(t.is_contiguous(), "tensors must be contiguous");
    }
    TORCH_CHECK(x.dim() >= 1, "x must have at least one dimension");
    const int64_t cols = x.size(-1);
    TORCH_CHECK(weight.numel() == cols, "weight must have size x.size(-1)");
    const c10::cuda::CUDAGuard guard(x.device());
    auto out = torch::empty(x.sizes(), x.options());
    if (x.numel() == 0) return out;
    const int64_t rows = x.numel() / cols;
    TORCH_CHECK(rows <= 2147483647LL, "too many rows for a 1-D grid");
    const float* xp = x.data_ptr<float>();
    const float* wp = weight.data_ptr<float>();
    float* yp = out.data_ptr<float>();
    const bool vec = cols % 4 == 0 && aligned16(xp) && aligned16(wp) && aligned16(yp);
    constexpr int THREADS = 512;
    rmsnorm_kernel<THREADS><<<(unsigned int)rows, THREADS, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xp, wp, yp, cols, static_cast<float>(eps), vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="htam_norm_rmsnorm_cuda_rowblock",
    cpp_sources=_CPP_DECL,
    cuda_sources=_CUDA_SOURCE,
    functions=["rmsnorm_forward"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.rmsnorm_forward(x.contiguous(), self.weight.contiguous(), float(self.eps))
