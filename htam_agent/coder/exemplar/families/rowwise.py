"""Row-wise reductions and normalizations over the last dimension (sum, mean, amax, argmax, softmax,
log_softmax, layernorm, rmsnorm), optionally after a Linear kept in PyTorch and before an elementwise chain.

Knobs: who owns a row (a block, or a warp with several rows per block), threads, float4 loads, two-pass
statistics vs one pass (online softmax, Welford), keeping a short row in registers (Triton), fast exp, and
whether the Linear's bias is added by PyTorch or while loading the row.
"""

from __future__ import annotations

from typing import Any

from .. import cpp_launch
from ..common import MAX_VARIANTS, NEXT, Knobs, Variants, ext_name, frame, prefix_lines
from ..ops import c_function, tl_body
from ..spec import Pattern
from ..templating import raw

FAMILY = "rowwise"
_REDUCE = ("sum", "mean", "amax", "argmax")
_PASSES = ("softmax", "log_softmax", "layernorm")


def space(pattern: Pattern, backend: str) -> dict[str, tuple[Any, ...]]:
    s: dict[str, tuple[Any, ...]]
    if backend == "cuda":
        s = {"mapping": ("block", "warp"), "block": (256, 128, 512, 1024), "vec": (1, 4)}
    elif backend == "triton":
        s = {"block": (1024, 2048, 4096), "warps": (4, 8), "cache": (False, True)}
    else:
        s = {"vec": (1, 8), **cpp_launch.launch_space(), "march": ("generic", "native")}
        if pattern.row_op not in _REDUCE:  # a row written once: non-temporal stores skip the read-for-ownership
            s["stores"] = ("cached", "stream")
    if pattern.row_op in _PASSES:
        s["passes"] = ("two_pass", "online")
    if backend != "cpp" and (pattern.row_op in ("softmax", "log_softmax") or (pattern.chain and pattern.chain.steps)):
        s["fast_math"] = (False, True)
    if pattern.prefix is not None and pattern.prefix.has_bias:
        s["bias"] = ("gemm", "epilogue")
    return s


def default(pattern: Pattern, backend: str) -> Knobs:
    """A block (or program) per row, scalar loads, two-pass statistics: the plain, robust starting point."""
    return {k: v[0] for k, v in space(pattern, backend).items()}


def safe(pattern: Pattern, backend: str) -> Knobs:
    return default(pattern, backend)


def moves(backend: str) -> dict[str, Knobs]:
    wide = 8 if backend == "cpp" else 4
    return {
        "pm_warp_per_row": {"mapping": "warp"},
        "pm_multi_row_per_block": {"mapping": "warp"},
        "pm_block_reduce_shuffle": {"mapping": "block"},
        "pm_two_pass_reduction": {"passes": "two_pass"},
        "fr_online_softmax": {"passes": "online"},
        "fr_welford_norm": {"passes": "online"},
        "fr_epilogue_fusion": {"bias": "epilogue"},
        "fr_elementwise_chain_fusion": {"bias": "epilogue"},
        "ma_vectorized_loads": {"vec": wide},
        "ma_avoid_redundant_loads": {"cache": True},
        "ma_streaming_stores": {"stores": "stream"},
        "it_multiple_accumulators": {"vec": wide},
        "oc_thread_coarsening": {"vec": wide},
        "oc_block_size": {"block": NEXT},
        "oc_autotune_dispatch": {"block": NEXT, "warps": NEXT},
        "it_fast_math_intrinsics": {"fast_math": True, "march": "native"},
    }


DIRECTION_MOVES: dict[str, Knobs] = {
    "memory_access": {"vec": NEXT, "cache": NEXT, "stores": NEXT},
    "parallel_mapping": {"mapping": NEXT, "warps": NEXT},
    "fusion_restructuring": {"passes": NEXT, "bias": NEXT},
    "occupancy_tuning": {"block": NEXT, "sched": NEXT},
    "instruction_throughput": {"fast_math": NEXT, "march": NEXT},
    "data_reuse": {"cache": NEXT},
    "launch_overhead": {"mapping": NEXT, "bias": NEXT, "threads": NEXT},
}


def curated(pattern: Pattern, backend: str) -> list[Knobs]:
    base = default(pattern, backend)
    sp = space(pattern, backend)
    variants = Variants(base, sp)
    add, out = variants.add, variants.items

    on = {"passes": "online"} if "passes" in sp else {}
    if "bias" in sp:
        on["bias"] = "epilogue"
    if backend == "cuda":
        for blk in sp["block"]:
            add(vec=4, block=blk)
            add(vec=4, block=blk, **on)
        add(mapping="warp", block=128, vec=4, **on)
        add(mapping="warp", block=256, vec=4)
        add(mapping="warp", block=256, vec=4, **on)
        add(vec=4, fast_math=True, **on)
        add(**on)
    elif backend == "triton":
        for blk in sp["block"]:
            add(block=blk, **on)
        add(block=4096, warps=8, **on)
        add(block=2048, warps=8)
        add(cache=True, **on)
        add(cache=True, warps=8, **on)
        add(fast_math=True, **on)
    else:
        return cpp_launch.curated(base, sp, ("vec", "march", "stores", "passes", "bias"))
    return out[:MAX_VARIANTS]


def _uses_rb(pattern: Pattern, knobs: Knobs) -> bool:
    return knobs.get("bias") == "epilogue"


def _tensor_params(pattern: Pattern, knobs: Knobs) -> list[tuple[str, str]]:
    """(kernel name, forward expression) of the extra tensors: affine weight/bias, the Linear's bias."""
    out = []
    if pattern.row_weight:
        out.append(("w", pattern.row_weight))
    if pattern.row_bias:
        out.append(("b", pattern.row_bias))
    if _uses_rb(pattern, knobs):
        assert pattern.prefix is not None
        out.append(("rb", f"self.{pattern.prefix.module}.bias"))
    return out


def _scalar_exprs(pattern: Pattern) -> list[str]:
    chain = pattern.chain
    return ([pattern.row_eps] if pattern.row_eps else []) + list(chain.scalars if chain else ())


def _forward(pattern: Pattern, knobs: Knobs) -> str:
    lines = prefix_lines(pattern, not _uses_rb(pattern, knobs))
    tensors = ", ".join(e for _, e in _tensor_params(pattern, knobs))
    lines.append(f"        return _row({pattern.row_input}, [{tensors}], [{', '.join(_scalar_exprs(pattern))}])")
    return "\n".join(lines)


def _out_shape_py(pattern: Pattern) -> str:
    if pattern.row_op not in _REDUCE:
        return "x.shape"
    return "x.shape[:-1] + (1,)" if pattern.keepdim else "x.shape[:-1]"


_PY_HEAD = '''
def _prepare(x, params, device_ok):
    if not (device_ok(x) and x.dtype == torch.float32 and x.dim() >= 1):
        raise ValueError("x must be a float32 tensor on the kernel's device with at least one dimension")
    x = x.contiguous()
    cols = x.shape[-1]
    if cols == 0 or cols >= 2**31:
        raise ValueError("rows must have between 1 and 2**31 - 1 elements")
    rows = x.numel() // cols
    for p in params:
        if p.numel() != cols or p.dtype != torch.float32 or not device_ok(p):
            raise ValueError("per-column parameters must be float32 vectors of the row length")
    out = torch.empty(_OUT_SHAPE(x), device=x.device, dtype=_OUT_DTYPE)
    return x, [p.contiguous() for p in params], out, rows, cols
'''


# ----------------------------------------------------------------------------------------------- CUDA


def _cuda(pattern: Pattern, knobs: Knobs) -> str:
    op = pattern.row_op
    fast = knobs.get("fast_math", False)
    EXP, LOG = ("__expf", "__logf") if fast else ("expf", "logf")
    warp = knobs["mapping"] == "warp"
    nt = 32 if warp else knobs["block"]
    rpb = knobs["block"] // 32 if warp else 1
    tparams = _tensor_params(pattern, knobs)
    names = [n for n, _ in tparams]
    online = knobs.get("passes") == "online"
    out_t = "long long" if op == "argmax" else "float"
    params = ["const float* __restrict__ x", f"{out_t}* __restrict__ y"]
    params += [f"const float* __restrict__ {n}" for n in names]
    params += ["double eps_in"] if pattern.row_eps else []
    nchain = len(pattern.chain.scalars) if pattern.chain else 0
    params += [f"double s{j}_in" for j in range(nchain)] + ["int rows", "int cols"]
    rb = " + rb[j]" if "rb" in names else ""
    chain = pattern.chain
    post_fn = c_function(chain, "cuda_fast" if fast else "cuda", "post", "__device__ __forceinline__") \
        if chain and chain.steps else ""
    post_args = "".join(f", s{j}" for j in range(nchain))

    def post(v: str) -> str:
        return f"post({v}{post_args})" if post_fn else v

    def stat_loop(update: str) -> str:
        """Every thread of the row visits its elements j (increasing), x = the row value."""
        return f"""    if (vec) {{
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int q = t; q < (cols >> 2); q += NT) {{
            const float4 v4 = x4[q];
            #pragma unroll
            for (int e = 0; e < 4; ++e) {{ const int j = 4 * q + e; const float x = (&v4.x)[e]{rb}; {update} }}
        }}
    }} else {{
        for (int j = t; j < cols; j += NT) {{ const float x = xr[j]{rb}; {update} }}
    }}"""

    def write_loop(value: str) -> str:
        return f"""    if (vec) {{
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        float4* y4 = reinterpret_cast<float4*>(yr);
        for (int q = t; q < (cols >> 2); q += NT) {{
            const float4 v4 = x4[q];
            float4 o4;
            #pragma unroll
            for (int e = 0; e < 4; ++e) {{ const int j = 4 * q + e; const float x = (&v4.x)[e]{rb}; (&o4.x)[e] = {post(value)}; }}
            y4[q] = o4;
        }}
    }} else {{
        for (int j = t; j < cols; j += NT) {{ const float x = xr[j]{rb}; yr[j] = {post(value)}; }}
    }}"""

    wj = " * w[j]" if "w" in names else ""
    bj = " + b[j]" if "b" in names else ""
    body: list[str] = []
    if op in ("sum", "mean"):
        body += ["    St s = st_id<0>();", stat_loop("s.a += x;"), "    s = row_red<0>(s, sh);",
                 f"    const float r = s.a{' / (float)cols' if op == 'mean' else ''};",
                 f"    if (t == 0) y[row] = {post('r')};"]
    elif op == "amax":
        body += ["    St s = st_id<1>();", stat_loop("s.a = fmaxf(s.a, x);"), "    s = row_red<1>(s, sh);",
                 f"    if (t == 0) y[row] = {post('s.a')};"]
    elif op == "argmax":
        body += ["    St s = st_id<3>();", stat_loop("if (s.i < 0 || x > s.a) { s.a = x; s.i = j; }"),
                 "    s = row_red<3>(s, sh);", "    if (t == 0) y[row] = (long long)s.i;"]
    elif op in ("softmax", "log_softmax"):
        if online:
            body += ["    St s = st_id<2>();",
                     stat_loop(f"if (x > s.a) {{ s.b *= {EXP}(s.a - x); s.a = x; }} s.b += {EXP}(x - s.a);"),
                     "    s = row_red<2>(s, sh);", "    const float m = s.a, tot = s.b;"]
        else:
            body += ["    St s = st_id<1>();", stat_loop("s.a = fmaxf(s.a, x);"), "    s = row_red<1>(s, sh);",
                     "    const float m = s.a;", "    s = st_id<0>();", stat_loop(f"s.a += {EXP}(x - m);"),
                     "    s = row_red<0>(s, sh);", "    const float tot = s.a;"]
        if op == "softmax":
            body += ["    const float inv = 1.0f / tot;", write_loop(f"{EXP}(x - m) * inv")]
        else:
            body += [f"    const float lse = m + {LOG}(tot);", write_loop("x - lse")]
    elif op == "layernorm":
        if online:
            body += ["    St s = st_id<4>();",
                     stat_loop("s.c += 1.0f; const float d = x - s.a; s.a += d / s.c; s.b += d * (x - s.a);"),
                     "    s = row_red<4>(s, sh);", "    const float mean = s.a, var = s.b / (float)cols;"]
        else:
            body += ["    St s = st_id<0>();", stat_loop("s.a += x;"), "    s = row_red<0>(s, sh);",
                     "    const float mean = s.a / (float)cols;", "    s = st_id<0>();",
                     stat_loop("const float d = x - mean; s.a += d * d;"), "    s = row_red<0>(s, sh);",
                     "    const float var = s.a / (float)cols;"]
        body += ["    const float rstd = 1.0f / sqrtf(var + eps);", write_loop(f"(x - mean) * rstd{wj}{bj}")]
    elif op == "rmsnorm":
        body += ["    St s = st_id<0>();", stat_loop("s.a += x * x;"), "    s = row_red<0>(s, sh);",
                 "    const float rinv = 1.0f / sqrtf(s.a / (float)cols + eps);", write_loop(f"x * rinv{wj}")]
    head = [
        "    __shared__ St sh[32];",
        "    const int t = RPB == 1 ? (int)threadIdx.x : (int)(threadIdx.x & 31);",
        "    const long long row = RPB == 1 ? (long long)blockIdx.x : (long long)blockIdx.x * RPB + (threadIdx.x >> 5);",
        "    if (row >= rows) return;  // whole warps leave together; block mapping never takes this",
        "    const float* xr = x + row * (long long)cols;",
    ]
    if pattern.row_eps:
        head.append("    const float eps = (float)eps_in;")
    head += [f"    const float s{j} = (float)s{j}_in;" for j in range(nchain)]
    align = "(unsigned long long)xr"
    if op not in _REDUCE:
        head.append("    float* yr = y + row * (long long)cols;")
        align += " | (unsigned long long)yr"
    head.append(f"    const bool vec = VEC && (cols & 3) == 0 && (({align}) & 15ull) == 0;")
    source = f"""#define NT {nt}
#define RPB {rpb}
#define VEC {1 if knobs['vec'] == 4 else 0}
#define NEG_INF __int_as_float(0xff800000)

struct St {{ float a; float b; float c; int i; }};

// K: 0 sum, 1 max, 2 online softmax (max, rescaled sum), 3 argmax (first index of the max), 4 Welford
template <int K> __device__ __forceinline__ St st_id() {{
    St s; s.a = (K == 1 || K == 2 || K == 3) ? NEG_INF : 0.0f; s.b = 0.0f; s.c = 0.0f; s.i = -1; return s;
}}

template <int K> __device__ __forceinline__ St comb(St x, St y) {{
    if (K == 0) {{ x.a += y.a; return x; }}
    if (K == 1) {{ x.a = fmaxf(x.a, y.a); return x; }}
    if (K == 2) {{
        if (y.a == NEG_INF) return x;
        if (x.a == NEG_INF) return y;
        const float m = fmaxf(x.a, y.a);
        x.b = x.b * {EXP}(x.a - m) + y.b * {EXP}(y.a - m); x.a = m; return x;
    }}
    if (K == 3) {{
        if (y.i < 0) return x;
        if (x.i < 0) return y;
        return (y.a > x.a || (y.a == x.a && y.i < x.i)) ? y : x;
    }}
    if (y.c == 0.0f) return x;
    if (x.c == 0.0f) return y;
    const float n = x.c + y.c, d = y.a - x.a;
    x.b = x.b + y.b + d * d * (x.c * y.c / n); x.a = x.a + d * (y.c / n); x.c = n; return x;
}}

template <int K> __device__ __forceinline__ St warp_red(St s) {{
    for (int o = 16; o > 0; o >>= 1) {{
        St u;
        u.a = __shfl_xor_sync(0xffffffffu, s.a, o); u.b = __shfl_xor_sync(0xffffffffu, s.b, o);
        u.c = __shfl_xor_sync(0xffffffffu, s.c, o); u.i = __shfl_xor_sync(0xffffffffu, s.i, o);
        s = comb<K>(s, u);
    }}
    return s;
}}

// every thread of the row gets the row's total
template <int K> __device__ __forceinline__ St row_red(St s, St* sh) {{
    s = warp_red<K>(s);
    if (RPB == 1 && NT > 32) {{
        const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
        __syncthreads();  // the previous reduction's readers are done with sh
        if (l == 0) sh[w] = s;
        __syncthreads();
        s = l < NT / 32 ? sh[l] : st_id<K>();
        s = warp_red<K>(s);
    }}
    return s;
}}

{post_fn}
extern "C" __global__ void __launch_bounds__(NT * RPB) row_kernel({', '.join(params)}) {{
""" + "\n".join(head + body) + "\n}\n"
    body_py = f'''_SOURCE = r"""
{source}"""

_NT = {nt}
_RPB = {rpb}
_OUT_DTYPE = {'torch.int64' if op == 'argmax' else 'torch.float32'}
_KERNEL = None


def _OUT_SHAPE(x):
    return {_out_shape_py(pattern)}
{_PY_HEAD}

def _kernel():
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = torch.cuda._compile_kernel(_SOURCE, "row_kernel")
    return _KERNEL


def _row(x, params, scalars):
    x, params, out, rows, cols = _prepare(x, params, lambda t: t.is_cuda)
    if rows == 0:
        return out
    if rows >= 2**31:
        raise ValueError("more than 2**31 - 1 rows")
    _kernel()(grid=((rows + _RPB - 1) // _RPB, 1, 1), block=(_NT * _RPB, 1, 1),
              args=[x, out, *params, *[float(s) for s in scalars], rows, cols])
    return out
'''
    who = f"one warp per row ({rpb} rows per block)" if warp else f"one {nt}-thread block per row"
    summary = (f"A plain CUDA kernel compiled by NVRTC computes {op} with {who}, "
               f"{'float4' if knobs['vec'] == 4 else 'scalar'} loads, warp-shuffle reductions"
               f"{', one-pass statistics' if online else ''}.")
    return frame(pattern, "cuda", FAMILY, knobs, summary, body_py, _forward(pattern, knobs))


# ----------------------------------------------------------------------------------------------- Triton


def _triton(pattern: Pattern, knobs: Knobs) -> str:
    op = pattern.row_op
    fast = knobs.get("fast_math", False)
    online = knobs.get("passes") == "online"
    names = [n for n, _ in _tensor_params(pattern, knobs)]
    chain = pattern.chain
    nchain = len(chain.scalars) if chain else 0
    params = ["x_ptr", "y_ptr"] + [f"{n}_ptr" for n in names] + (["eps"] if pattern.row_eps else [])
    params += [f"s{j}" for j in range(nchain)] + ["cols", "BLOCK: tl.constexpr", "SINGLE: tl.constexpr"]
    exp = (lambda v: f"tl.math.exp2(({v}) * 1.4426950408889634)") if fast else (lambda v: f"tl.exp({v})")
    log = (lambda v: f"(tl.math.log2({v}) * 0.6931471805599453)") if fast else (lambda v: f"tl.log({v})")

    def load(ind: str, other: str) -> list[str]:
        lines = [f"{ind}mask = idx < cols", f"{ind}x = tl.load(xr + idx, mask=mask, other=0.0)"]
        if "rb" in names:
            lines.append(f"{ind}x = x + tl.load(rb_ptr + idx, mask=mask, other=0.0)")
        if other != "0.0":
            lines.append(f"{ind}x = tl.where(mask, x, {other})")
        return lines

    def loop(update: list[str], other: str = "0.0") -> list[str]:
        """Stats over tiles; with SINGLE the row was loaded once into registers (x, mask, idx)."""
        ind = "        "
        fix = [f"        x = tl.where(mask, x, {other})"] if other != "0.0" else []
        return (["    if SINGLE:"] + fix + [f"        {u}" for u in update] + ["    else:",
                "        for start in range(0, cols, BLOCK):", "            idx = start + offs"]
                + load(ind + "    ", other) + [f"            {u}" for u in update])

    wj = " * tl.load(w_ptr + idx, mask=mask, other=0.0)" if "w" in names else ""
    bj = " + tl.load(b_ptr + idx, mask=mask, other=0.0)" if "b" in names else ""
    lines = ["    row = tl.program_id(0).to(tl.int64)", "    xr = x_ptr + row * cols", "    offs = tl.arange(0, BLOCK)",
             "    if SINGLE:", "        idx = offs"] + load("        ", "0.0")
    minus_inf = 'float("-inf")'
    value = ""
    if op in ("sum", "mean", "rmsnorm"):
        sq = "x * x" if op == "rmsnorm" else "x"
        lines += ["    acc = tl.zeros([BLOCK], dtype=tl.float32)"] + loop([f"acc += tl.where(mask, {sq}, 0.0)"])
        lines += ["    tot = tl.sum(acc, axis=0)"]
        if op == "rmsnorm":
            lines += ["    rinv = 1.0 / tl.sqrt(tot / cols + eps)"]
            value = f"x * rinv{wj}"
        else:
            value = "tot / cols" if op == "mean" else "tot"
    elif op == "amax":
        lines += [f"    acc = tl.full([BLOCK], {minus_inf}, tl.float32)"]
        lines += loop([f"acc = tl.maximum(acc, tl.where(mask, x, {minus_inf}))"])
        value = "tl.max(acc, axis=0)"
    elif op == "argmax":
        lines += [f"    bv = tl.full([BLOCK], {minus_inf}, tl.float32)", "    bi = tl.zeros([BLOCK], dtype=tl.int32)"]
        lines += loop(["better = mask & (x > bv)",
                       "bv = tl.where(better, x, bv)", "bi = tl.where(better, idx, bi)"])
        lines += ["    m = tl.max(bv, axis=0)", "    value = tl.min(tl.where(bv == m, bi, 2147483647), axis=0)"]
        value = "value.to(tl.int64)"
    elif op in ("softmax", "log_softmax"):
        if online:
            lines += [f"    m_vec = tl.full([BLOCK], {minus_inf}, tl.float32)", "    s_vec = tl.zeros([BLOCK], dtype=tl.float32)"]
            lines += loop(["m_new = tl.maximum(m_vec, x)", f"m_sub = tl.where(m_new == {minus_inf}, 0.0, m_new)",
                           f"s_vec = s_vec * {exp('m_vec - m_sub')} + {exp('x - m_sub')}", "m_vec = m_new"],
                          minus_inf)
            lines += ["    m = tl.max(m_vec, axis=0)", f"    tot = tl.sum(s_vec * {exp('m_vec - m')}, axis=0)"]
        else:
            lines += [f"    mx = tl.full([BLOCK], {minus_inf}, tl.float32)"]
            lines += loop([f"mx = tl.maximum(mx, tl.where(mask, x, {minus_inf}))"])
            lines += ["    m = tl.max(mx, axis=0)", "    acc = tl.zeros([BLOCK], dtype=tl.float32)"]
            lines += loop([f"acc += tl.where(mask, {exp('x - m')}, 0.0)"])
            lines += ["    tot = tl.sum(acc, axis=0)"]
        if op == "softmax":
            lines += ["    inv = 1.0 / tot"]
            value = f"{exp('x - m')} * inv"
        else:
            lines += [f"    lse = m + {log('tot')}"]
            value = "x - lse"
    elif op == "layernorm":
        if online:
            lines += ["    n_vec = tl.zeros([BLOCK], dtype=tl.float32)", "    mean_vec = tl.zeros([BLOCK], dtype=tl.float32)",
                      "    m2_vec = tl.zeros([BLOCK], dtype=tl.float32)"]
            lines += loop(["n_new = n_vec + tl.where(mask, 1.0, 0.0)", "d = x - mean_vec",
                           "mean_vec = mean_vec + tl.where(mask, d / tl.maximum(n_new, 1.0), 0.0)",
                           "m2_vec = m2_vec + tl.where(mask, d * (x - mean_vec), 0.0)", "n_vec = n_new"])
            lines += ["    mean = tl.sum(n_vec * mean_vec, axis=0) / cols", "    dm = mean_vec - mean",
                      "    var = (tl.sum(m2_vec, axis=0) + tl.sum(n_vec * dm * dm, axis=0)) / cols"]
        else:
            lines += ["    acc = tl.zeros([BLOCK], dtype=tl.float32)"] + loop(["acc += tl.where(mask, x, 0.0)"])
            lines += ["    mean = tl.sum(acc, axis=0) / cols", "    acc2 = tl.zeros([BLOCK], dtype=tl.float32)"]
            lines += loop(["d = tl.where(mask, x - mean, 0.0)", "acc2 += d * d"])
            lines += ["    var = tl.sum(acc2, axis=0) / cols"]
        lines += ["    rstd = 1.0 / tl.sqrt(var + eps)"]
        value = f"(x - mean) * rstd{wj}{bj}"
    post_lines: list[str] = []
    result = "r"
    if chain and chain.steps:
        post_lines, result = tl_body(chain, fast, "IND")
    if op in _REDUCE:
        lines += [f"    r = {value}"] + [p.replace("IND", "    ").replace("a0", "r") for p in post_lines]
        lines += [f"    tl.store(y_ptr + row, {result})"]
    else:
        def write(ind: str) -> list[str]:
            return ([f"{ind}a0 = {value}"] + [p.replace("IND", ind) for p in post_lines]
                    + [f"{ind}tl.store(y_ptr + row * cols + idx, {result if post_lines else 'a0'}, mask=mask)"])
        lines += ["    if SINGLE:"] + write("        ") + ["    else:", "        for start in range(0, cols, BLOCK):",
                                                           "            idx = start + offs"]
        lines += load("            ", "0.0") + write("            ")
    kernel = "@triton.jit\ndef _row_kernel(" + ", ".join(params) + "):\n" + "\n".join(lines) + "\n"
    body_py = f'''{kernel}

_BLOCK = {knobs['block']}
_WARPS = {knobs['warps']}
_CACHE = {knobs['cache']}  # rows up to 8192 wide are read once and kept in registers
_OUT_DTYPE = {'torch.int64' if op == 'argmax' else 'torch.float32'}


def _OUT_SHAPE(x):
    return {_out_shape_py(pattern)}
{_PY_HEAD}

def _row(x, params, scalars):
    x, params, out, rows, cols = _prepare(x, params, lambda t: t.device == x.device)
    if rows == 0:
        return out
    single = _CACHE and cols <= 8192
    block = triton.next_power_of_2(cols) if single else min(_BLOCK, triton.next_power_of_2(cols))
    _row_kernel[(rows,)](x, out, *params, *[float(s) for s in scalars], cols, BLOCK=block, SINGLE=single,
                         num_warps=_WARPS)
    return out
'''
    summary = (f"A Triton kernel computes {op}, one program per row over {knobs['block']}-wide tiles"
               f"{', one-pass statistics' if online else ''}{', short rows kept in registers' if knobs['cache'] else ''}.")
    return frame(pattern, "triton", FAMILY, knobs, summary, body_py, _forward(pattern, knobs),
                 "import triton\nimport triton.language as tl")


# ----------------------------------------------------------------------------------------------- C++


def _cpp(pattern: Pattern, knobs: Knobs) -> str:
    op = pattern.row_op
    online = knobs.get("passes") == "online"
    tparams = _tensor_params(pattern, knobs)
    names = [n for n, _ in tparams]
    chain = pattern.chain
    nchain = len(chain.scalars) if chain else 0
    simd = knobs["vec"] > 1
    post_fn = c_function(chain, "cpp", "post", "static inline") if chain and chain.steps else ""
    post_args = "".join(f", s{j}" for j in range(nchain))

    def post(v: str) -> str:
        return f"post({v}{post_args})" if post_fn else v

    def pragma(red: str = "") -> str:
        return f"        #pragma omp simd{' reduction(' + red + ')' if red else ''}\n" if simd else ""

    X = "(p[j] + rb[j])" if "rb" in names else "p[j]"
    wj = " * w[j]" if "w" in names else ""
    bj = " + b[j]" if "b" in names else ""
    stream = knobs.get("stores") == "stream"

    def write(v: str) -> str:
        """The row's output loop. Streamed: 16 values at a time into a local block, then non-temporal stores
        (SSE, on every x86-64) that skip the read-for-ownership of a line written once; the tail, a row that
        is not 16-byte aligned, or a CPU without SSE take plain stores. Each row ends with a fence, so no
        thread's streamed stores are pending when the call returns."""
        def plain(start: str) -> str:
            return f"        for (int64_t j = {start}; j < cols; ++j) {{ const float x = {X}; q[j] = {post(v)}; }}\n"

        if not stream:
            return pragma() + plain("0")
        return ("        int64_t j0 = 0;\n#if defined(__SSE__)\n"
                "        if ((reinterpret_cast<uintptr_t>(q) & 15) == 0) {\n"
                "            for (; j0 + 16 <= cols; j0 += 16) {\n"
                "                alignas(64) float t[16];\n"
                f"{'                #pragma omp simd' + chr(10) if simd else ''}"
                f"                for (int64_t j = j0; j < j0 + 16; ++j) {{ const float x = {X}; "
                f"t[j - j0] = {post(v)}; }}\n"
                "                for (int k = 0; k < 16; k += 4) _mm_stream_ps(q + j0 + k, _mm_load_ps(t + k));\n"
                "            }\n            _mm_sfence();\n        }\n#endif\n" + plain("j0"))
    body = ""
    if op in ("sum", "mean"):
        body = (f"        double s = 0.0;\n{pragma('+ : s')}        for (int64_t j = 0; j < cols; ++j) s += {X};\n"
                f"        y[r] = {post('(float)(s' + (' / cols)' if op == 'mean' else ')'))};\n")
    elif op == "amax":
        body = (f"        float m = -INFINITY;\n{pragma('max : m')}"
                f"        for (int64_t j = 0; j < cols; ++j) m = std::max(m, (float){X});\n        y[r] = {post('m')};\n")
    elif op == "argmax":
        body = (f"        float best = -INFINITY; int64_t bi = -1;\n        for (int64_t j = 0; j < cols; ++j) {{ "
                f"const float x = {X}; if (bi < 0 || x > best) {{ best = x; bi = j; }} }}\n        y[r] = bi;\n")
    elif op in ("softmax", "log_softmax"):
        if online:
            body = ("        float m = -INFINITY; double s = 0.0;\n        for (int64_t j = 0; j < cols; ++j) {\n"
                    f"            const float x = {X};\n            if (x > m) {{ s = s * std::exp((double)m - x); m = x; }}\n"
                    "            s += std::exp((double)x - m);\n        }\n")
        else:
            body = (f"        float m = -INFINITY;\n{pragma('max : m')}"
                    f"        for (int64_t j = 0; j < cols; ++j) m = std::max(m, (float){X});\n"
                    f"        double s = 0.0;\n{pragma('+ : s')}"
                    f"        for (int64_t j = 0; j < cols; ++j) s += std::exp({X} - m);\n")
        if op == "softmax":
            body += "        const float inv = (float)(1.0 / s);\n" + write("std::exp(x - m) * inv")
        else:
            body += "        const float lse = m + (float)std::log(s);\n" + write("x - lse")
    elif op == "layernorm":
        if online:
            body = ("        double mean = 0.0, m2 = 0.0;\n        for (int64_t j = 0; j < cols; ++j) {\n"
                    f"            const double x = {X}, d = x - mean;\n            mean += d / (j + 1);\n"
                    "            m2 += d * (x - mean);\n        }\n        const double var = m2 / cols;\n")
        else:
            body = (f"        double s = 0.0;\n{pragma('+ : s')}        for (int64_t j = 0; j < cols; ++j) s += {X};\n"
                    f"        const double mean = s / cols;\n        double v = 0.0;\n{pragma('+ : v')}"
                    f"        for (int64_t j = 0; j < cols; ++j) {{ const double d = {X} - mean; v += d * d; }}\n"
                    "        const double var = v / cols;\n")
        body += ("        const float rstd = (float)(1.0 / std::sqrt(var + eps));\n"
                 "        const float meanf = (float)mean;\n" + write(f"(x - meanf) * rstd{wj}{bj}"))
    elif op == "rmsnorm":
        body = (f"        double s = 0.0;\n{pragma('+ : s')}        for (int64_t j = 0; j < cols; ++j) {{ "
                f"const double x = {X}; s += x * x; }}\n"
                "        const float rinv = (float)(1.0 / std::sqrt(s / cols + eps));\n" + write(f"x * rinv{wj}"))
    out_t = "int64_t" if op == "argmax" else "float"
    sig = ["torch::Tensor xt", "torch::Tensor yt"] + [f"torch::Tensor {n}t" for n in names]
    sig += ["double eps"] if pattern.row_eps else []
    sig += [f"double s{j}_in" for j in range(nchain)]
    sig += ["std::vector<int64_t> C"]
    ptrs = "".join(f"    const float* __restrict__ {n} = {n}t.data_ptr<float>();\n" for n in names)
    scal = "".join(f"    const float s{j} = (float)s{j}_in;\n" for j in range(nchain))
    qline = "" if op in _REDUCE else "        float* __restrict__ q = yp + r * cols;\n"
    source = f"""#include <torch/extension.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>
{'#if defined(__SSE__)' + chr(10) + '#include <immintrin.h>' + chr(10) + '#endif' if stream else ''}
{raw("cpp_cfg.cpp.tmpl")}
{post_fn}
void row_forward({', '.join(sig)}) {{
    TORCH_CHECK(xt.is_contiguous() && xt.scalar_type() == torch::kFloat32, "x must be contiguous float32");
    const int64_t cols = xt.size(-1);
    const int64_t rows = xt.numel() / cols;
    const float* __restrict__ xp = xt.data_ptr<float>();
    {out_t}* __restrict__ y = yt.data_ptr<{out_t}>();
    {out_t}* __restrict__ yp = y;
    (void)yp;
{ptrs}{scal}    const Cfg CF = cfg_of(C, rows);  // threads and schedule: the launch knobs (_CFG), read at call time
    PAR_FOR
    for (int64_t r = 0; r < rows; ++r) {{
        const float* __restrict__ p = xp + r * cols;
{qline}{body}    }}
}}
"""
    flags = ["-O3", "-fopenmp"] + (["-march=native"] if knobs["march"] == "native" else [])
    body_py = f'''_CPP_SOURCE = r"""
{source}"""

_ext = load_inline(
    name="{ext_name('htam_ex_row', source + repr(flags))}",
    cpp_sources=_CPP_SOURCE,
    functions=["row_forward"],
    extra_cflags={flags!r},
    extra_ldflags=["-fopenmp"],
)
_OUT_DTYPE = {'torch.int64' if op == 'argmax' else 'torch.float32'}
{cpp_launch.cfg_line(knobs)}


def _OUT_SHAPE(x):
    return {_out_shape_py(pattern)}
{_PY_HEAD}

def _row(x, params, scalars):
    x, params, out, rows, cols = _prepare(x, params, lambda t: t.device.type == "cpu")
    if rows:
        _ext.row_forward(x, out, *params, *[float(s) for s in scalars], _CFG)
    return out
'''
    summary = (f"An OpenMP C++ loop over rows (load_inline) computes {op} with double accumulators"
               f"{', one-pass statistics' if online else ''}{', omp simd' if simd else ''}"
               f"{', non-temporal (streaming) stores of the output' if stream else ''}"
               f"{', one thread' if knobs.get('threads') == 'one' else ''}"
               f"{', ' + knobs['sched'] + ' schedule' if knobs.get('sched', 'static') != 'static' else ''}.")
    return frame(pattern, "cpp", FAMILY, knobs, summary, body_py, _forward(pattern, knobs),
                 "from torch.utils.cpp_extension import load_inline")


def render(pattern: Pattern, backend: str, knobs: Knobs) -> str:
    return {"cuda": _cuda, "triton": _triton, "cpp": _cpp}[backend](pattern, knobs)


__all__ = ["FAMILY", "DIRECTION_MOVES", "curated", "default", "moves", "render", "safe", "space"]
