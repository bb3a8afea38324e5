"""LayerNorm over the last dimension in CUDA: one 512-thread block per row. Pass 1 accumulates shifted sums
sum(x - k), sum((x - k)^2) with k = the row's first element (no catastrophic cancellation for offset data),
float4 loads when aligned, warp-shuffle + shared-memory block reduction; pass 2 (the row is hot in L2)
writes (x - mean) * rstd * weight + bias."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_DECL = "torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps);"

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
__global__ void layernorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                 const float* __restrict__ b, float* __restrict__ y,
                                 int64_t cols, float eps, bool vec) {
    const int64_t off = (int64_t)blockIdx.x * cols;
    const float* xr = x + off;
    float* yr = y + off;
    const float k = xr[0];
    float s1 = 0.0f, s2 = 0.0f;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int64_t i = threadIdx.x; i < cols / 4; i += THREADS) {
            const float4 v = x4[i];
            const float a = v.x - k, c = v.y - k, d = v.z - k, e = v.w - k;
            s1 += (a + c) + (d + e);
            s2 += (a * a + c * c) + (d * d + e * e);
        }
    } else {
        for (int64_t i = threadIdx.x; i < cols; i += THREADS) {
            const float a = xr[i] - k;
            s1 += a;
            s2 += a * a;
        }
    }
    s1 = warp_sum(s1);
    s2 = warp_sum(s2);
    __shared__ float p1[THREADS / 32], p2[THREADS / 32];
    __shared__ float row_mean, row_rstd;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) { p1[warp] = s1; p2[warp] = s2; }
    __syncthreads();
    if (warp == 0) {
        s1 = warp_sum(lane < THREADS / 32 ? p1[lane] : 0.0f);
        s2 = warp_sum(lane < THREADS / 32 ? p2[lane] : 0.0f);
        if (lane == 0) {
            const float inv_n = 1.0f / (float)cols;
            const float dm = s1 * inv_n;                      // mean - k
            const float var = fmaxf(s2 * inv_n - dm * dm, 0.0f);
            row_mean = k + dm;
            row_rstd = rsqrtf(var + eps);
        }
    }
    __syncthreads();
    const float mean = row_mean, rstd = row_rstd;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        const float4* w4 = reinterpret_cast<const float4*>(w);
        const float4* b4 = reinterpret_cast<const float4*>(b);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (int64_t i = threadIdx.x; i < cols / 4; i += THREADS) {
            const float4 v = x4[i], ww = w4[i], bb = b4[i];
            float4 o;
            o.x = (v.x - mean) * rstd * ww.x + bb.x;
            o.y = (v.y - mean) * rstd * ww.y + bb.y;
            o.z = (v.z - mean) * rstd * ww.z + bb.z;
            o.w = (v.w - mean) * rstd * ww.w + bb.w;
            y4[i] = o;
        }
    } else {
        for (int64_t i = threadIdx.x; i < cols; i += THREADS) yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
    }
}

static bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    for (const auto& t : {x, weight, bias}) {
        TORCH_CHECK(t.is_cuda(), "tensors must be CUDA tensors");
        TORCH_CHECK(t.scalar_type() == torch::kFloat32, "tensors must be float32");
        TORCH_CHECK(t.is_contiguous(), "tensors must be contiguous");
    }
    TORCH_CHECK(x.dim() >= 1, "x must have at least one dimension");
    const int64_t cols = x.size(-1);
    TORCH_CHECK(weight.numel() == cols && bias.numel() == cols, "weight/bias must have size x.size(-1)");
    const c10::cuda::CUDAGuard guard(x.device());
    auto out = torch::empty(x.sizes(), x.options());
    if (x.numel() == 0) return out;
    const int64_t rows = x.numel() / cols;
    TORCH_CHECK(rows <= 2147483647LL, "too many rows for a 1-D grid");
    const float* xp = x.data_ptr<float>();
    const float* wp = weight.data_ptr<float>();
    const float* bp = bias.data_ptr<float>();
    float* yp = out.data_ptr<float>();
    const bool vec = cols % 4 == 0 && aligned16(xp) && aligned16(wp) && aligned16(bp) && aligned16(yp);
    constexpr int THREADS = 512;
    layernorm_kernel<THREADS><<<(unsigned int)rows, THREADS, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xp, wp, bp, yp, cols, static_cast<float>(eps), vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="htam_norm_layernorm_cuda_rowblock",
    cpp_sources=_CPP_DECL,
    cuda_sources=_CUDA_SOURCE,
    functions=["layernorm_forward"],
    extra_cuda_cflags=["-O3"],
)


class _LayerNormParams(nn.Module):
    """Holds `weight` and `bias` under the same names as nn.LayerNorm (state_dict keys ln.weight, ln.bias)."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = _LayerNormParams(dim, 1e-5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.layernorm_forward(
            x.contiguous(), self.ln.weight.contiguous(), self.ln.bias.contiguous(), float(self.ln.eps)
        )
