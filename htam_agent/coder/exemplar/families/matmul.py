"""fp32 matmul C = A @ B (2-D) and batched C[b] = A[b] @ B[b] with tiling.

Knobs: tile sizes (block tile and per-thread register micro-tile on CUDA; BLOCK_M/N/K on Triton; cache blocks
on C++), shared-memory padding, grouped tile order for L2 reuse, pipeline stages. Edges are masked, so any
M, N, K work; fp32 FMA throughout (no TF32), as the reference computes.
"""

from __future__ import annotations

from typing import Any

from .. import cpp_launch
from ..common import MAX_VARIANTS, NEXT, Knobs, ext_name, frame
from ..spec import Pattern
from ..templating import raw

FAMILY = "matmul"
_CUDA_TILES = ("16x16x16t1", "32x32x32t2", "64x64x16t4", "128x128x8t8")  # BMxBNxBK, t: per-thread TM = TN
_TRITON_TILES = ("64x64x32", "128x128x32", "128x64x32", "64x128x32", "32x32x32")
_CPP_TILES = (0, 64, 128)


def space(pattern: Pattern, backend: str) -> dict[str, tuple[Any, ...]]:
    if backend == "cuda":
        return {"tile": _CUDA_TILES, "pad": (False, True), "swizzle": (False, True)}
    if backend == "triton":
        return {"tile": _TRITON_TILES, "group": (1, 8), "stages": (2, 3, 4), "warps": (4, 8)}
    return {"block": _CPP_TILES, "vec": (1, 8), **cpp_launch.launch_space(), "march": ("generic", "native")}


def default(pattern: Pattern, backend: str) -> Knobs:
    return {k: v[0] for k, v in space(pattern, backend).items()}


def safe(pattern: Pattern, backend: str) -> Knobs:
    return default(pattern, backend)


def moves(backend: str) -> dict[str, Knobs]:
    return {
        "dr_smem_tiling_gemm": {"tile": "32x32x32t2" if backend == "cuda" else "128x128x32", "block": 64},
        "dr_register_blocking": {"tile": "64x64x16t4" if backend == "cuda" else "128x128x32", "vec": 8},
        "oc_thread_coarsening": {"tile": "128x128x8t8" if backend == "cuda" else "128x64x32"},
        "dr_l2_swizzle": {"swizzle": True, "group": 8},
        "ma_smem_transpose": {"pad": True},
        "oc_smem_budget": {"pad": True, "stages": NEXT},
        "dr_double_buffering": {"stages": NEXT},
        "ma_async_copy_pipeline": {"stages": 4},
        "oc_block_size": {"tile": NEXT, "block": NEXT},
        "oc_autotune_dispatch": {"tile": NEXT, "warps": NEXT, "block": NEXT},
        "ma_vectorized_loads": {"vec": 8},
        "it_unroll_constexpr": {"vec": 8, "warps": 8},
        "it_fast_math_intrinsics": {"march": "native"},
    }


DIRECTION_MOVES: dict[str, Knobs] = {
    "data_reuse": {"tile": NEXT, "block": NEXT},
    "memory_access": {"pad": NEXT, "vec": NEXT, "group": NEXT},
    "parallel_mapping": {"tile": NEXT, "block": NEXT},
    "instruction_throughput": {"tile": NEXT, "march": NEXT},
    "occupancy_tuning": {"tile": NEXT, "warps": NEXT, "block": NEXT, "sched": NEXT},
    "fusion_restructuring": {"swizzle": NEXT, "group": NEXT, "block": NEXT},
    "launch_overhead": {"swizzle": NEXT, "stages": NEXT, "march": NEXT, "threads": NEXT},
}


def curated(pattern: Pattern, backend: str) -> list[Knobs]:
    base = default(pattern, backend)
    out = [base]

    def add(**kw: Any) -> None:
        k = dict(base)
        k.update(kw)
        if k not in out:
            out.append(k)

    if backend == "cuda":
        for t in _CUDA_TILES:
            add(tile=t)
            add(tile=t, pad=True, swizzle=True)
        add(tile="64x64x16t4", pad=True)
        add(tile="128x128x8t8", swizzle=True)
    elif backend == "triton":
        for t in _TRITON_TILES:
            add(tile=t, group=8)
        add(tile="128x128x32", group=8, warps=8, stages=3)
        add(tile="128x128x32", group=8, warps=8, stages=4)
        add(tile="128x64x32", group=8, stages=3)
        add(tile="64x64x32", group=8, stages=4)
    else:
        return cpp_launch.curated(base, space(pattern, backend), ("block", "vec", "march"))
    return out[:MAX_VARIANTS]


def _py_wrapper(batched: bool, device_ok: str, launch: str) -> str:
    """Shape checks and output allocation shared by the backends; `launch` fills C."""
    b = "batched" if batched else "2-D"
    head = ("    if A.dim() != 3 or B.dim() != 3 or A.shape[0] != B.shape[0] or A.shape[2] != B.shape[1]:\n"
            f"        raise ValueError(f'{b} matmul needs (b, m, k) x (b, k, n), got {{tuple(A.shape)}} x {{tuple(B.shape)}}')\n"
            "    nb, M, K = A.shape\n    N = B.shape[2]\n"
            if batched else
            "    if A.dim() != 2 or B.dim() != 2 or A.shape[1] != B.shape[0]:\n"
            f"        raise ValueError(f'{b} matmul needs (m, k) x (k, n), got {{tuple(A.shape)}} x {{tuple(B.shape)}}')\n"
            "    nb, (M, K), N = 1, A.shape, B.shape[1]\n")
    shape = "(nb, M, N)" if batched else "(M, N)"
    return f'''def _matmul(A, B):
    for t in (A, B):
        if not ({device_ok} and t.dtype == torch.float32):
            raise ValueError("A and B must be float32 tensors on the kernel's device")
{head}    A, B = A.contiguous(), B.contiguous()
    C = torch.empty({shape}, device=A.device, dtype=torch.float32)
    if C.numel() == 0:
        return C
    if K == 0:
        return C.zero_()
{launch}    return C
'''


def _forward(pattern: Pattern) -> str:
    return f"        return _matmul({pattern.mm_a}, {pattern.mm_b})"


def _cuda(pattern: Pattern, knobs: Knobs) -> str:
    dims, tm = knobs["tile"].split("t")
    bm, bn, bk = (int(v) for v in dims.split("x"))
    t = int(tm)
    nt = (bm // t) * (bn // t)
    pad = 1 if knobs["pad"] else 0
    swz = 1 if knobs["swizzle"] else 0
    source = f"""#define BM {bm}
#define BN {bn}
#define BK {bk}
#define TM {t}
#define TN {t}
#define NT {nt}
#define PAD {pad}
#define SWIZZLE {swz}

// C[z] = A[z] @ B[z]: A (M, K), B (K, N), row-major; one block per BM x BN tile of C, TM x TN outputs per thread
extern "C" __global__ void __launch_bounds__(NT) mm_f32(const float* __restrict__ A, const float* __restrict__ B,
                                                      float* __restrict__ C, int M, int N, int K) {{
    __shared__ float As[BK][BM + PAD];
    __shared__ float Bs[BK][BN + PAD];
    const long long z = blockIdx.z;
    A += z * (long long)M * K;
    B += z * (long long)K * N;
    C += z * (long long)M * N;
    // tiles are numbered on grid.x (2^31 - 1 blocks): grid.y's 65535 would cap M at 65535 * BM
    const int gx = (N + BN - 1) / BN, gy = (M + BM - 1) / BM, lin = blockIdx.x;
    int bx = lin % gx, by = lin / gx;
    if (SWIZZLE) {{  // groups of 8 tile rows walk the tile columns together: A and B tiles stay in L2
        const int group = 8;
        const int per = group * gx, first = (lin / per) * group, rows = min(gy - first, group);
        by = first + (lin % per) % rows;
        bx = (lin % per) / rows;
    }}
    const int row0 = by * BM, col0 = bx * BN;
    const int tid = threadIdx.x, ty = tid / (BN / TN), tx = tid % (BN / TN);
    float acc[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {{
        for (int l = tid; l < BM * BK; l += NT) {{
            const int r = l / BK, c = l % BK, gr = row0 + r, gc = k0 + c;
            As[c][r] = (gr < M && gc < K) ? A[(long long)gr * K + gc] : 0.0f;
        }}
        for (int l = tid; l < BK * BN; l += NT) {{
            const int r = l / BN, c = l % BN, gr = k0 + r, gc = col0 + c;
            Bs[r][c] = (gr < K && gc < N) ? B[(long long)gr * N + gc] : 0.0f;
        }}
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < BK; ++kk) {{
            float a[TM], b[TN];
            #pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[kk][ty + i * (BM / TM)];
            #pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx + j * (BN / TN)];
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                #pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }}
        __syncthreads();
    }}
    #pragma unroll
    for (int i = 0; i < TM; ++i) {{
        const int r = row0 + ty + i * (BM / TM);
        if (r >= M) continue;
        #pragma unroll
        for (int j = 0; j < TN; ++j) {{
            const int c = col0 + tx + j * (BN / TN);
            if (c < N) C[(long long)r * N + c] = acc[i][j];
        }}
    }}
}}
"""
    launch = ("    if max(M, N, K) >= 2**31 or nb > 65535:\n        raise ValueError('sizes beyond 32-bit ints')\n"
              "    grid = (((N + _BN - 1) // _BN) * ((M + _BM - 1) // _BM), 1, nb)\n"
              "    _kernel()(grid=grid, block=(_NT, 1, 1), args=[A, B, C, M, N, K])\n")
    body_py = f'''_SOURCE = r"""
{source}"""

_BM, _BN, _NT = {bm}, {bn}, {nt}
_KERNEL = None


def _kernel():
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = torch.cuda._compile_kernel(_SOURCE, "mm_f32")
    return _KERNEL


{_py_wrapper(pattern.mm_batched, "t.is_cuda", launch)}'''
    summary = (f"A plain CUDA kernel compiled by NVRTC: {bm}x{bn} output tiles, K steps of {bk} through shared "
               f"memory{' (padded)' if pad else ''}, {t}x{t} outputs per thread in registers"
               f"{', grouped tile order' if swz else ''}.")
    return frame(pattern, "cuda", FAMILY, knobs, summary, body_py, _forward(pattern))


def _triton(pattern: Pattern, knobs: Knobs) -> str:
    bm, bn, bk = (int(v) for v in knobs["tile"].split("x"))
    kernel = '''@triton.jit
def _mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    z = tl.program_id(1).to(tl.int64)
    a_ptr += z * M * K
    b_ptr += z * K * N
    c_ptr += z * M * N
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * num_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m.to(tl.int64)[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k.to(tl.int64)[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        k_ok = offs_k < K - k
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    c_ptrs = c_ptr + offs_m.to(tl.int64)[:, None] * N + offs_n[None, :]
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
'''
    launch = (f"    grid = (triton.cdiv(M, {bm}) * triton.cdiv(N, {bn}), nb)\n"
              f"    _mm_kernel[grid](A, B, C, M, N, K, BLOCK_M={bm}, BLOCK_N={bn}, BLOCK_K={bk}, "
              f"GROUP_M={knobs['group']},\n                     num_warps={knobs['warps']}, num_stages={knobs['stages']})\n")
    body_py = f"{kernel}\n\n{_py_wrapper(pattern.mm_batched, 't.device == A.device', launch)}"
    summary = (f"A Triton kernel: {bm}x{bn}x{bk} tiles, tl.dot in ieee fp32 (no TF32), group {knobs['group']} "
               f"tile order, {knobs['stages']} stages, masked edges.")
    return frame(pattern, "triton", FAMILY, knobs, summary, body_py, _forward(pattern),
                 "import triton\nimport triton.language as tl")


def _cpp(pattern: Pattern, knobs: Knobs) -> str:
    blk = knobs["block"]
    # block, simd, threads and schedule are read from _CFG at call time: one build per -march serves them all
    loop = """    const Cfg CF = cfg_of(C, nb * M);
    const int64_t blk = CF.blk;
    if (blk > 0) {
        const int64_t nbi = (M + blk - 1) / blk;
        _Pragma("omp parallel for collapse(2) num_threads(CF.nth) schedule(runtime)")
        for (int64_t z = 0; z < nb; ++z)
        for (int64_t bi = 0; bi < nbi; ++bi) {
            const int64_t i0 = bi * blk, i1 = std::min(M, i0 + blk);
            const float* __restrict__ a = A + z * M * K;
            const float* __restrict__ b = B + z * K * N;
            float* __restrict__ c = Cm + z * M * N;
            for (int64_t i = i0; i < i1; ++i) std::fill(c + i * N, c + (i + 1) * N, 0.0f);
            for (int64_t k0 = 0; k0 < K; k0 += blk) {
                const int64_t k1 = std::min(K, k0 + blk);
                for (int64_t j0 = 0; j0 < N; j0 += blk * 4) {
                    const int64_t j1 = std::min(N, j0 + blk * 4);
                    for (int64_t i = i0; i < i1; ++i)
                        for (int64_t k = k0; k < k1; ++k) {
                            const float av = a[i * K + k];
                            float* __restrict__ cr = c + i * N;
                            const float* __restrict__ br = b + k * N;
                            if (CF.simd) {
                                _Pragma("omp simd")
                                for (int64_t j = j0; j < j1; ++j) cr[j] += av * br[j];
                            } else {
                                for (int64_t j = j0; j < j1; ++j) cr[j] += av * br[j];
                            }
                        }
                }
            }
        }
    } else {
        _Pragma("omp parallel for collapse(2) num_threads(CF.nth) schedule(runtime)")
        for (int64_t z = 0; z < nb; ++z)
        for (int64_t i = 0; i < M; ++i) {
            const float* __restrict__ a = A + z * M * K;
            const float* __restrict__ b = B + z * K * N;
            float* __restrict__ cr = Cm + z * M * N + i * N;
            std::fill(cr, cr + N, 0.0f);
            for (int64_t k = 0; k < K; ++k) {
                const float av = a[i * K + k];
                const float* __restrict__ br = b + k * N;
                if (CF.simd) {
                    _Pragma("omp simd")
                    for (int64_t j = 0; j < N; ++j) cr[j] += av * br[j];
                } else {
                    for (int64_t j = 0; j < N; ++j) cr[j] += av * br[j];
                }
            }
        }
    }"""
    source = f"""#include <torch/extension.h>
#include <algorithm>
#include <vector>
{raw("cpp_cfg.cpp.tmpl")}
// C[z] = A[z] @ B[z], i-k-j order so the inner loop streams rows of B and C
void mm_forward(torch::Tensor At, torch::Tensor Bt, torch::Tensor Ct, int64_t nb, int64_t M, int64_t N, int64_t K,
                std::vector<int64_t> C) {{
    TORCH_CHECK(At.is_contiguous() && Bt.is_contiguous() && Ct.is_contiguous(), "contiguous tensors expected");
    const float* __restrict__ A = At.data_ptr<float>();
    const float* __restrict__ B = Bt.data_ptr<float>();
    float* __restrict__ Cm = Ct.data_ptr<float>();
{loop}
}}
"""
    flags = ["-O3", "-fopenmp"] + (["-march=native"] if knobs["march"] == "native" else [])
    launch = "    _ext.mm_forward(A, B, C, nb, M, N, K, _CFG)\n"
    body_py = f'''_CPP_SOURCE = r"""
{source}"""

_ext = load_inline(
    name="{ext_name('htam_ex_mm', source + repr(flags))}",
    cpp_sources=_CPP_SOURCE,
    functions=["mm_forward"],
    extra_cflags={flags!r},
    extra_ldflags=["-fopenmp"],
)


{cpp_launch.cfg_line(knobs)}


{_py_wrapper(pattern.mm_batched, 't.device.type == "cpu"', launch)}'''
    summary = (f"An OpenMP C++ kernel (load_inline), i-k-j loop order{f', {blk}-wide cache blocks' if blk else ''}"
               f"{', omp simd inner loop' if knobs['vec'] > 1 else ''}"
               f"{', one thread' if knobs.get('threads') == 'one' else ''}"
               f"{', ' + knobs['sched'] + ' schedule' if knobs.get('sched', 'static') != 'static' else ''}.")
    return frame(pattern, "cpp", FAMILY, knobs, summary, body_py, _forward(pattern),
                 "from torch.utils.cpp_extension import load_inline")


def render(pattern: Pattern, backend: str, knobs: Knobs) -> str:
    return {"cuda": _cuda, "triton": _triton, "cpp": _cpp}[backend](pattern, knobs)
