"""Staged programs (program.py): one kernel per stage, elementwise work fused into the stages around it.

Every stage reads its inputs through an expression evaluated at a flat index; operands of other shapes are
reached through broadcast index maps (`(i / div) % mod * mul` per run of kept dims) computed by the launcher
from the runtime shapes, so no size is baked in and the alt-shape check sees the same code path. Reductions
keep per-thread state in double (sums, shifted sums of squares for variances, online max/sum for
logsumexp and softmax, first-index arg-reductions); the CUDA launcher picks a thread, warp or block per output
and splits long reductions over several blocks with a second combining kernel.

Knobs (cuda): threads per block, the mapping of reductions (auto by shape, or forced thread/warp/block),
splitting long reductions, one-pass (shifted) vs two-pass statistics, fast exp/log, elements per thread of
the map kernels, grid-stride launch, and moving the GEMM/conv bias into the first stage. cpp: OpenMP loops
of the same arithmetic (how the CPU tests check it), with omp simd and -march=native.
"""

from __future__ import annotations

from typing import Any

from ...base import UnsupportedTask
from ..common import NEXT, Knobs, Variants, ext_name, frame
from ..ops import c_expr, c_literal
from ..program import E, Program, Stage, replace
from ..spec import Pattern

FAMILY = "staged"
_RED_OPS = {"sum": 0, "mean": 1, "max": 2, "min": 3, "prod": 4, "argmax": 5, "argmin": 6, "lse": 7, "meanvar": 8}


def _program(pattern: Pattern) -> Program:
    return pattern.extra["program"]


def _has(p: Program, kind: str, ops: tuple[str, ...] = ()) -> bool:
    return any(s.kind == kind and (not ops or s.params.get("op") in ops) for s in p.stages)


def _bias_movable(p: Program) -> bool:
    if not p.prefix_has_bias or p.prefix_tensor < 0:
        return False
    return not any(t.expr.startswith("_y.") for t in p.tensors)


def space(pattern: Pattern, backend: str) -> dict[str, tuple[Any, ...]]:
    p = _program(pattern)
    if backend == "triton":
        raise UnsupportedTask("exemplar coder: staged programs (KernelBench-style chains of reductions, norms, "
                              "pools and scans) are written for the cuda and cpp backends; use one of them or an LLM")
    s: dict[str, tuple[Any, ...]]
    reducing = any(st.kind in ("reduce", "norm", "scan") for st in p.stages)
    if backend == "cuda":
        s = {"block": (256, 128, 512)}
        if reducing:
            s["mapping"] = ("auto", "thread", "warp", "block")
        if _has(p, "reduce") or _has(p, "norm"):
            s["split"] = (True, False)
        if _has(p, "map") or _has(p, "pool"):
            s["unroll"] = (1, 4)
            s["grid"] = ("flat", "stride")
        s["fast_math"] = (False, True)
    else:
        s = {"simd": (False, True), "march": ("generic", "native")}
    if _has(p, "norm", ("standardize",)):
        s["passes"] = ("one_pass", "two_pass")
    if _bias_movable(p):
        s["bias"] = ("gemm", "epilogue")
    return s


def default(pattern: Pattern, backend: str) -> Knobs:
    """Shape-driven mapping, split long reductions, one-pass shifted statistics, bias left in the GEMM."""
    return {k: v[0] for k, v in space(pattern, backend).items()}


def safe(pattern: Pattern, backend: str) -> Knobs:
    return default(pattern, backend)


def moves(backend: str) -> dict[str, Knobs]:
    return {
        "pm_warp_per_row": {"mapping": "warp"},
        "pm_multi_row_per_block": {"mapping": "warp"},
        "pm_block_reduce_shuffle": {"mapping": "block"},
        "pm_two_pass_reduction": {"passes": "two_pass"},
        "fr_welford_norm": {"passes": "one_pass"},
        "pm_grid_stride_loop": {"grid": "stride"},
        "lo_persistent_kernel": {"grid": "stride"},
        "oc_thread_coarsening": {"unroll": 4},
        "it_multiple_accumulators": {"unroll": 4},
        "oc_block_size": {"block": NEXT},
        "oc_autotune_dispatch": {"block": NEXT},
        "oc_launch_bounds_registers": {"block": NEXT},
        "it_fast_math_intrinsics": {"fast_math": True, "march": "native"},
        "fr_epilogue_fusion": {"bias": "epilogue"},
        "fr_elementwise_chain_fusion": {"bias": "epilogue"},
        "lo_horizontal_fusion": {"bias": "epilogue"},
        "ma_vectorized_loads": {"simd": True, "unroll": 4},
        "pm_split_k": {"split": True},
        "pm_parallel_scan": {"mapping": "block"},
        "oc_wave_quantization": {"split": True, "grid": "stride"},
        "lo_small_problem_path": {"split": False},
    }


DIRECTION_MOVES: dict[str, Knobs] = {
    "memory_access": {"unroll": NEXT, "simd": NEXT},
    "parallel_mapping": {"mapping": NEXT, "split": NEXT},
    "occupancy_tuning": {"block": NEXT},
    "instruction_throughput": {"fast_math": NEXT, "march": NEXT},
    "fusion_restructuring": {"bias": NEXT, "passes": NEXT},
    "launch_overhead": {"grid": NEXT, "split": NEXT},
    "data_reuse": {"passes": NEXT},
}


def curated(pattern: Pattern, backend: str) -> list[Knobs]:
    """The default first, then single knob changes, then a few combinations (<= 24)."""
    base = default(pattern, backend)
    sp = space(pattern, backend)
    variants = Variants(base, sp)
    add, out = variants.add, variants.items

    for key, values in sp.items():
        for v in values[1:]:
            add(**{key: v})
    if backend == "cuda":
        add(fast_math=True, bias="epilogue", unroll=4)
        add(fast_math=True, mapping="block", block=512)
        add(fast_math=True, mapping="warp", block=128)
        add(fast_math=True, grid="stride", unroll=4, block=512)
        add(fast_math=True, passes="two_pass", bias="epilogue")
    else:
        add(simd=True, march="native", bias="epilogue")
    return out[:24]


# ------------------------------------------------------------------------------------------------ emitting


class _Emit:
    """Flattens a stage's expressions: tensor and scalar slots, the runtime shape program, broadcast edges."""

    def __init__(self, program: Program, dialect: str) -> None:
        self.program = program
        self.dialect = dialect
        self.tslots: list[int] = []  # tensor ids
        self.sslots: list[str] = []  # scalar Python expressions
        self.nodes: list[tuple[str, list[int], Any]] = []  # runtime shape program
        self.edges: list[tuple[int, int, list[list[int]]]] = []  # (parent node, child node, runs of dims)

    def tslot(self, tid: int) -> int:
        if tid not in self.tslots:
            self.tslots.append(tid)
        return self.tslots.index(tid)

    def sslot(self, expr: str) -> int:
        if expr not in self.sslots:
            self.sslots.append(expr)
        return self.sslots.index(expr)

    def flatten(self, e: E) -> int:
        """Node id of `e` in the shape program (children first)."""
        if e.kind == "leaf":
            self.nodes.append(("leaf", [], self.tslot(e.val)))
        elif e.kind == "self":
            self.nodes.append(("self", [], None))
        elif e.kind in ("lit", "sc"):
            if e.kind == "sc":
                self.sslot(e.val)
            self.nodes.append(("const", [], None))
        elif e.kind == "view":
            kid = self.flatten(e.args[0])
            self.nodes.append(("view", [kid], e.val))
        else:
            kids = [self.flatten(a) for a in e.args]
            self.nodes.append(("op", kids, None))
            me = len(self.nodes) - 1
            for a, k in zip(e.args, kids, strict=True):
                if a.kind in ("lit", "sc") or tuple(a.shape or ()) == tuple(e.shape or ()):
                    continue
                self.edges.append((me, k, _runs(tuple(a.shape or ()), tuple(e.shape or ()))))
            return me
        return len(self.nodes) - 1

    def code(self, e: E, root: int, idx: str, lines: list[str]) -> str:
        """C statements (appended) and the C expression of `e` at flat index `idx` (its node id is `root`)."""
        def go(node: E, nid: int, ix: str) -> str:
            if node.kind == "leaf":
                return f"LD(P{self.tslots.index(node.val)}, {ix})"
            if node.kind == "self":
                return "v"
            if node.kind == "lit":
                return c_literal(node.val)
            if node.kind == "sc":
                return f"S{self.sslots.index(node.val)}"
            kid_ids = self.nodes[nid][1]
            if node.kind == "view":
                return go(node.args[0], kid_ids[0], ix)
            args = []
            for a, k in zip(node.args, kid_ids, strict=True):
                edge = next((n for n, ed in enumerate(self.edges) if ed[0] == nid and ed[1] == k), None)
                cix = ix
                if edge is not None:
                    runs = self.edges[edge][2]
                    cix = f"j{edge}"
                    terms = []
                    for r in range(len(runs)):
                        b = f"B{edge}_{r}"
                        lines.append(f"        const unsigned int {cix}q{r} = fdiv((unsigned int)({ix}), (unsigned int){b}dm, {b}ds);")
                        terms.append(f"(long long)(({cix}q{r} - fdiv({cix}q{r}, (unsigned int){b}mm, {b}ms) * (unsigned int){b}m) "
                                     f"* (unsigned int){b}u)")
                    lines.append(f"        const long long {cix} = {' + '.join(terms) if terms else '0'};")
                args.append(go(a, k, cix))
            var = f"e{len(lines)}_{nid}"
            lines.append(f"        const float {var} = {c_expr(node.op, args, self.dialect)};")
            return var

        return go(e, root, idx)

    def edge_params(self) -> list[str]:
        return [f"int B{e}_{r}{c}" for e, ed in enumerate(self.edges) for r in range(len(ed[2])) for c in _EDGE_FIELDS]


# per run of kept dims: magic/shift of its divisor, its size with magic/shift, the child's inner size
_EDGE_FIELDS = ("dm", "ds", "m", "mm", "ms", "u")


def _runs(child: tuple[int, ...], parent: tuple[int, ...]) -> list[list[int]]:
    """Runs of consecutive parent dims the child varies along (its other dims broadcast)."""
    pad = (1,) * (len(parent) - len(child)) + child
    runs: list[list[int]] = []
    for d in range(len(parent)):
        if pad[d] == parent[d] and pad[d] != 1:
            if runs and runs[-1][-1] == d - 1:
                runs[-1].append(d)
            else:
                runs.append([d])
    return runs


_RUNTIME = '''
def _bshape(*shapes):
    return tuple(torch.broadcast_shapes(*[s for s in shapes if s is not None]))


def _view_shape(shape, spec):
    kind, d = spec
    shape = list(shape)
    if kind == "unsqueeze":
        d = d % (len(shape) + 1)
        return tuple(shape[:d] + [1] + shape[d:])
    d = d % len(shape)
    return tuple(shape[:d] + shape[d + 1:]) if shape[d] == 1 else tuple(shape)


def _shapes(prog, tshapes, self_shape):
    sh = []
    for kind, kids, spec in prog:
        if kind == "leaf":
            sh.append(tuple(tshapes[spec]))
        elif kind == "self":
            sh.append(tuple(self_shape))
        elif kind == "const":
            sh.append(None)
        elif kind == "view":
            sh.append(_view_shape(sh[kids[0]], spec))
        else:
            sh.append(_bshape(*[sh[k] for k in kids]))
    return sh


def _magic(d):
    """(multiplier, shift) so that n // d == (umulhi(n, m) + n) >> s for every 0 <= n < 2**31 (as signed ints)."""
    d = max(int(d), 1)
    s = 0
    while (1 << s) < d:
        s += 1
    m = ((1 << 32) * ((1 << s) - d)) // d + 1
    return (m - (1 << 32) if m >= 1 << 31 else m), s


def _edge_args(edges, sh):
    """Per run of kept dims: child index = sum((i // div) % mod * mul), divisions by magic numbers."""
    out = []
    for parent, child, runs in edges:
        p, c = sh[parent], sh[child]
        _check_n(math.prod(p))
        c = (1,) * (len(p) - len(c)) + tuple(c)
        for run in runs:
            last = run[-1]
            div, mod, mul = math.prod(p[last + 1:]), math.prod(p[run[0]:last + 1]), math.prod(c[last + 1:])
            out += [*_magic(div), mod, *_magic(mod), mul]
    return [int(v) for v in out]


def _dims(dims, rank):
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    out = sorted({int(d) % max(rank, 1) for d in dims})
    if out and out != list(range(out[0], out[-1] + 1)):
        raise ValueError(f"reduction dims {out} are not adjacent")
    return out


def _layout(shape, dims):
    """(K, R, K2): outputs, reduced length, inner stride; the input is [K / K2, R, K2]."""
    if not dims:
        return math.prod(shape), 1, 1
    k1 = math.prod(shape[:dims[0]])
    r = math.prod(shape[dims[0]:dims[-1] + 1])
    k2 = math.prod(shape[dims[-1] + 1:])
    return k1 * k2, r, k2


def _tup(v, nd):
    if isinstance(v, (list, tuple)):
        v = tuple(int(a) for a in v)
        return v if len(v) == nd else (v * nd)[:nd]
    return (int(v),) * nd


def _pool_geom(shape, nd, kernel, stride, padding, dilation, ceil):
    """Input/output sizes and window parameters per pooled dim, padded to 3 dims."""
    k = _tup(kernel, nd)
    s = _tup(stride if stride is not None and stride != () and stride != [] else kernel, nd)
    p, d = _tup(padding, nd), _tup(dilation, nd)
    ins = tuple(shape[-nd:])
    outs = []
    for L, kk, ss, pp, dd in zip(ins, k, s, p, d):
        num = L + 2 * pp - dd * (kk - 1) - 1
        o = (-(-num // ss) if ceil else num // ss) + 1
        if ceil and (o - 1) * ss >= L + pp:
            o -= 1
        outs.append(max(o, 0))
    pad = 3 - nd
    geo = [(1,) * pad + ins, (1,) * pad + tuple(outs), (1,) * pad + k, (1,) * pad + s, (0,) * pad + p,
           (1,) * pad + d]
    magics = [v for o in reversed(geo[1]) for v in _magic(o)]
    return tuple(shape[:-nd]) + tuple(outs), [int(v) for g in geo for v in g] + magics


def _check_n(*ns):
    for n in ns:
        if n >= 2**31:
            raise ValueError("sizes of 2**31 or more are outside these kernels' 32-bit arguments")
'''


_C_COMMON = r'''
struct St { double a; double b; double c; long long i; };

// OP: 0 sum, 1 mean, 2 max, 3 min, 4 prod, 5 argmax, 6 argmin, 7 online logsumexp, 8 shifted mean/variance
DEV St st_id(int op) {
    St s; s.b = 0.0; s.c = 0.0; s.i = -1;
    s.a = (op == 2 || op == 5 || op == 7) ? -D_INF : (op == 3 || op == 6) ? D_INF : (op == 4 ? 1.0 : 0.0);
    return s;
}

DEV void st_upd(St& s, int op, float x, long long r, double shift) {
    switch (op) {
    case 0: case 1: s.a += (double)x; break;
    case 2: s.a = (double)x > s.a ? (double)x : s.a; break;
    case 3: s.a = (double)x < s.a ? (double)x : s.a; break;
    case 4: s.a *= (double)x; break;
    case 5: if (s.i < 0 || (double)x > s.a) { s.a = x; s.i = r; } break;
    case 6: if (s.i < 0 || (double)x < s.a) { s.a = x; s.i = r; } break;
    case 7:
        if ((double)x > s.a) { s.b = s.b * (double)EXPF((float)(s.a - (double)x)) + 1.0; s.a = x; }
        else { s.b += (double)EXPF((float)((double)x - s.a)); }
        break;
    default: { const double d = (double)x - shift; s.a += d; s.b += d * d; s.c += 1.0; }
    }
}

DEV St st_comb(St x, St y, int op) {
    switch (op) {
    case 0: case 1: x.a += y.a; return x;
    case 2: x.a = y.a > x.a ? y.a : x.a; return x;
    case 3: x.a = y.a < x.a ? y.a : x.a; return x;
    case 4: x.a *= y.a; return x;
    case 5: if (y.i < 0) return x; if (x.i < 0) return y;
        return (y.a > x.a || (y.a == x.a && y.i < x.i)) ? y : x;
    case 6: if (y.i < 0) return x; if (x.i < 0) return y;
        return (y.a < x.a || (y.a == x.a && y.i < x.i)) ? y : x;
    case 7: {
        if (y.b == 0.0) return x;
        if (x.b == 0.0) return y;
        const double m = x.a > y.a ? x.a : y.a;
        x.b = x.b * (double)EXPF((float)(x.a - m)) + y.b * (double)EXPF((float)(y.a - m)); x.a = m; return x;
    }
    default: x.a += y.a; x.b += y.b; x.c += y.c; return x;
    }
}

// the reduced value (op 8: the mean; its variance is st_var)
DEV double st_fin(St s, int op, long long R, double shift) {
    switch (op) {
    case 1: return s.a / (double)R;
    case 5: case 6: return (double)s.i;
    case 7: return s.a + (double)LOGF((float)s.b);
    case 8: return shift + s.a / s.c;
    default: return s.a;
    }
}

DEV double st_var(St s) {
    const double m = s.a / s.c;
    const double v = s.b / s.c - m * m;
    return v > 0.0 ? v : 0.0;
}

// flat input index of reduced element r of output k: form A is [K / K2, R, K2]; form B is [R / R2, K, R2]
// K2m/K2s: magic multiplier and shift of K2 (fdiv), so the index costs no integer division
#define red_idx(k, r, K, R, K2, formB) red_idx_(k, r, K, R, K2, formB, K2m, K2s)
DEV long long red_idx_(long long k, long long r, long long K, long long R, long long K2, int formB, int K2m, int K2s) {
    if (formB) {
        const unsigned int q = fdiv((unsigned int)r, (unsigned int)K2m, K2s);
        return (long long)q * K * K2 + k * K2 + (r - (long long)q * K2);
    }
    const unsigned int q = fdiv((unsigned int)k, (unsigned int)K2m, K2s);
    return (long long)q * R * K2 + r * K2 + (k - (long long)q * K2);
}
'''

_CUDA_HEAD = r'''#define DEV __device__ __forceinline__
#define LD(p, i) ((float)(p)[i])
#define D_INF __longlong_as_double(0x7ff0000000000000LL)
#define UMULHI(a, b) __umulhi(a, b)
// n / d for 0 <= n < 2**31, with (m, s) = _magic(d) computed by the launcher: no integer division on the GPU
DEV unsigned int fdiv(unsigned int n, unsigned int m, int s) { return (UMULHI(n, m) + n) >> s; }
#define F_NEG_INF __int_as_float(0xff800000)
#define IMIN(a, b) ((a) < (b) ? (a) : (b))
'''

_CUDA_GROUP = r'''
DEV St st_shfl(St s, int o) {
    St u;
    u.a = __shfl_xor_sync(0xffffffffu, s.a, o); u.b = __shfl_xor_sync(0xffffffffu, s.b, o);
    u.c = __shfl_xor_sync(0xffffffffu, s.c, o); u.i = __shfl_xor_sync(0xffffffffu, s.i, o);
    return u;
}

DEV St warp_red(St s, int op) {
    for (int o = 16; o > 0; o >>= 1) s = st_comb(s, st_shfl(s, o), op);
    return s;
}

// every thread of the group gets the group's total (G = 1: the thread alone; 32: a warp; NT: the block)
DEV St group_red(St s, int op, St* sh) {
    if (G == 1) return s;
    s = warp_red(s, op);
    if (G > 32) {
        const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
        __syncthreads();
        if (l == 0) sh[w] = s;
        __syncthreads();
        s = l < NT / 32 ? sh[l] : st_id(op);
        s = warp_red(s, op);
    }
    return s;
}
'''


def _params(em: _Emit, with_edges: bool = True) -> list[str]:
    tps = []
    for n, tid in enumerate(em.tslots):
        ctype = {"float": "float", "long": "long long", "bool": "bool"}[em.program.tensors[tid].dtype]
        tps.append(f"const {ctype}* __restrict__ P{n}")
    return tps + [f"double S{j}_in" for j in range(len(em.sslots))] + (em.edge_params() if with_edges else [])


def _scalars(em: _Emit) -> list[str]:
    return [f"    const float S{j} = (float)S{j}_in;" for j in range(len(em.sslots))]


def _lambdas(em: _Emit, stage: Stage, roots: dict[str, int]) -> list[str]:
    """IN(i): the input expression at flat input index i; POST(i, v): the epilogue at flat output index i."""
    out = []
    lines: list[str] = []
    val = em.code(stage.inp, roots["inp"], "i", lines)
    out += ["    auto IN = [&](long long i) -> float {", *lines, f"        return {val};", "    };"]
    if stage.post is not None:
        lines = []
        val = em.code(stage.post, roots["post"], "i", lines)
        out += ["    auto POST = [&](long long i, float v) -> float {", *lines, f"        return {val};", "    };"]
    else:
        out += ["    auto POST = [&](long long i, float v) -> float { (void)i; return v; };"]
    return out


def _prepare_stage(program: Program, stage: Stage, dialect: str) -> tuple[_Emit, dict[str, int]]:
    em = _Emit(program, dialect)
    roots = {"inp": em.flatten(stage.inp)}
    inp_nodes = len(em.nodes)
    if stage.post is not None:
        roots["post"] = em.flatten(stage.post)
    roots["_inp_nodes"] = inp_nodes
    return em, roots


# ------------------------------------------------------------------------------------------------ CUDA kernels


def _cuda_stage(program: Program, stage: Stage, k: int, knobs: Knobs) -> tuple[list[tuple[str, str]], str]:
    """[(kernel name, source)] and the Python launcher `_stage{k}` for one stage."""
    fast = knobs.get("fast_math", False)
    em, roots = _prepare_stage(program, stage, "cuda_fast" if fast else "cuda")
    nt = knobs["block"]
    head = (f"#define NT {nt}\n{_CUDA_HEAD}#define EXPF {'__expf' if fast else 'expf'}\n"
            f"#define LOGF {'__logf' if fast else 'logf'}\n")
    lam = _lambdas(em, stage, roots)
    prm = _params(em)
    out_t = "long long" if stage.out_dtype == "long" else "float"
    kind = stage.kind
    kernels: list[tuple[str, str]] = []
    if kind == "map":
        unroll = knobs.get("unroll", 1)
        src = head + f"""
extern "C" __global__ void __launch_bounds__(NT) k_map(float* __restrict__ out, {', '.join(prm + ['int n'])}) {{
{chr(10).join(_scalars(em))}
{chr(10).join(lam)}
    for (long long i0 = (long long)blockIdx.x * NT * {unroll} + threadIdx.x; i0 < n; i0 += (long long)gridDim.x * NT * {unroll}) {{
        #pragma unroll
        for (int u = 0; u < {unroll}; ++u) {{
            const long long i = i0 + (long long)u * NT;
            if (i < n) out[i] = POST(i, IN(i));
        }}
    }}
}}
"""
        kernels.append(("k_map", src))
    elif kind in ("reduce", "norm", "scan"):
        op = _RED_OPS.get(stage.params.get("op", ""), 0)
        if kind == "norm":
            op = 7 if stage.params["op"] in ("softmax", "log_softmax") else 8
        if kind == "scan":
            op = 4 if stage.params["op"] == "prod" else 0
        src = head + f"#define OP {op}\n" + "{G_DEFINE}" + _C_COMMON + _CUDA_GROUP
        if kind == "reduce":
            bn = stage.params.get("op") == "meanvar"
            extra = ["St* __restrict__ ws", "float* __restrict__ rm", "float* __restrict__ rv", "double mom",
                     "int upd"] if bn else ["St* __restrict__ ws"]
            sig = ", ".join([f"{out_t}* __restrict__ out"] + prm + extra + ["int K", "int R", "int K2", "int formB",
                                                                            "int P", "int K2m", "int K2s"])
            fin = _cuda_fin(bn, out_t)
            src += f"""
extern "C" __global__ void __launch_bounds__(NT) k_red({sig}) {{
{chr(10).join(_scalars(em))}
{chr(10).join(lam)}
    __shared__ St sh[32];
    const long long unit = G == 1 ? (long long)blockIdx.x * NT + threadIdx.x
                                  : (G == 32 ? (long long)blockIdx.x * (NT / 32) + (threadIdx.x >> 5) : (long long)blockIdx.x);
    const int lane = G == 1 ? 0 : (G == 32 ? (int)(threadIdx.x & 31) : (int)threadIdx.x);
    if (unit >= (long long)K * P) return;  // uniform per group
    const long long k = unit % K, part = unit / K;
    const long long chunk = (R + P - 1) / P;
    const long long r0 = part * chunk, r1 = r0 + chunk < R ? r0 + chunk : R;
    const double shift = OP == 8 && R > 0 ? (double)IN(red_idx(k, 0, K, R, K2, formB)) : 0.0;
    St s = st_id(OP);
    for (long long r = r0 + lane; r < r1; r += G) st_upd(s, OP, IN(red_idx(k, r, K, R, K2, formB)), r, shift);
    s = group_red(s, OP, sh);
    if (lane != 0) return;
    if (P > 1) {{ ws[unit] = s; return; }}
{fin}
}}

extern "C" __global__ void __launch_bounds__(NT) k_fin({sig}) {{
{chr(10).join(_scalars(em))}
{chr(10).join(lam)}
    const long long k = (long long)blockIdx.x * (NT / 32) + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (k >= K) return;
    const double shift = OP == 8 && R > 0 ? (double)IN(red_idx(k, 0, K, R, K2, formB)) : 0.0;
    St s = st_id(OP);
    for (long long q = lane; q < P; q += 32) s = st_comb(s, ws[q * K + k], OP);
    s = warp_red(s, OP);
    if (lane != 0) return;
{fin}
}}
"""
            kernels += [("k_red", src), ("k_fin", src)]
        elif kind == "norm":
            so = stage.params["op"]
            two = knobs.get("passes") == "two_pass" and op == 8
            sig = ", ".join(["float* __restrict__ out"] + prm + ["double eps", "int K", "int R", "int K2", "int formB",
                                                                    "int K2m", "int K2s"])
            if op == 7:
                stats = ("    St s = st_id(7);\n"
                         "    for (long long r = lane; r < R; r += G) st_upd(s, 7, IN(red_idx(k, r, K, R, K2, formB)), r, 0.0);\n"
                         "    s = group_red(s, 7, sh);\n    const float m = (float)s.a;\n")
                stats += ("    const float inv = (float)(1.0 / s.b);\n" if so == "softmax"
                          else "    const float lse = (float)(s.a + log(s.b));\n")
                val = "EXPF(x - m) * inv" if so == "softmax" else "x - lse"
            elif two:
                stats = ("    St s = st_id(0);\n"
                         "    for (long long r = lane; r < R; r += G) st_upd(s, 0, IN(red_idx(k, r, K, R, K2, formB)), r, 0.0);\n"
                         "    s = group_red(s, 0, sh);\n    const double mean = s.a / (double)R;\n"
                         "    St q = st_id(0);\n"
                         "    for (long long r = lane; r < R; r += G) { const double d = (double)IN(red_idx(k, r, K, R, K2, formB)) - mean; q.a += d * d; }\n"
                         "    q = group_red(q, 0, sh);\n"
                         "    const float meanf = (float)mean, rstd = (float)(1.0 / sqrt(q.a / (double)R + eps));\n")
                val = "(x - meanf) * rstd"
            else:
                stats = ("    const double shift = R > 0 ? (double)IN(red_idx(k, 0, K, R, K2, formB)) : 0.0;\n"
                         "    St s = st_id(8);\n"
                         "    for (long long r = lane; r < R; r += G) st_upd(s, 8, IN(red_idx(k, r, K, R, K2, formB)), r, shift);\n"
                         "    s = group_red(s, 8, sh);\n"
                         "    const float meanf = (float)st_fin(s, 8, R, shift), rstd = (float)(1.0 / sqrt(st_var(s) + eps));\n")
                val = "(x - meanf) * rstd"
            src += f"""
extern "C" __global__ void __launch_bounds__(NT) k_norm({sig}) {{
{chr(10).join(_scalars(em))}
{chr(10).join(lam)}
    __shared__ St sh[32];
    const long long k = G == 1 ? (long long)blockIdx.x * NT + threadIdx.x
                               : (G == 32 ? (long long)blockIdx.x * (NT / 32) + (threadIdx.x >> 5) : (long long)blockIdx.x);
    const int lane = G == 1 ? 0 : (G == 32 ? (int)(threadIdx.x & 31) : (int)threadIdx.x);
    if (k >= K) return;  // uniform per group
{stats}    for (long long r = lane; r < R; r += G) {{
        const long long i = red_idx(k, r, K, R, K2, formB);
        const float x = IN(i);
        out[i] = POST(i, {val});
    }}
}}
"""
            # few long rows: partial statistics over chunks (k_npart), combined per row (k_nfin), then one
            # elementwise pass over every element (k_napply) instead of one block per row
            ssig = ", ".join(["float* __restrict__ out"] + prm + ["double eps", "St* __restrict__ ws",
                                                                 "float* __restrict__ stats", "int K", "int R", "int K2",
                                                                 "int formB", "int K2m", "int K2s", "int P", "int Rm",
                                                                 "int Rs"])
            if op == 7:
                fin2 = ("    stats[2 * k] = (float)s.a;\n"
                        + ("    stats[2 * k + 1] = (float)(1.0 / s.b);\n" if so == "softmax"
                           else "    stats[2 * k + 1] = (float)(s.a + log(s.b));\n"))
                app = ("const float m = stats[2 * k], inv = stats[2 * k + 1];" if so == "softmax"
                       else "const float lse = stats[2 * k + 1];")
            else:
                fin2 = ("    stats[2 * k] = (float)st_fin(s, 8, R, shift);\n"
                        "    stats[2 * k + 1] = (float)(1.0 / sqrt(st_var(s) + eps));\n")
                app = "const float meanf = stats[2 * k], rstd = stats[2 * k + 1];"
            src += f"""
extern "C" __global__ void __launch_bounds__(NT) k_npart({ssig}) {{
{chr(10).join(_scalars(em))}
{chr(10).join(lam)}
    __shared__ St sh[32];
    const long long unit = blockIdx.x, k = unit % K, part = unit / K;
    const long long chunk = (R + P - 1) / P;
    const long long r0 = part * chunk, r1 = r0 + chunk < R ? r0 + chunk : R;
    const double shift = OP == 8 ? (double)IN(red_idx(k, 0, K, R, K2, formB)) : 0.0;
    St s = st_id(OP);
    for (long long r = r0 + threadIdx.x; r < r1; r += NT) st_upd(s, OP, IN(red_idx(k, r, K, R, K2, formB)), r, shift);
    s = warp_red(s, OP);
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    if (l == 0) sh[w] = s;
    __syncthreads();
    if (w == 0) {{
        s = l < NT / 32 ? sh[l] : st_id(OP);
        s = warp_red(s, OP);
        if (l == 0) ws[unit] = s;
    }}
}}

extern "C" __global__ void __launch_bounds__(NT) k_nfin({ssig}) {{
{chr(10).join(_scalars(em))}
{chr(10).join(lam)}
    const long long k = (long long)blockIdx.x * (NT / 32) + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (k >= K) return;
    const double shift = OP == 8 ? (double)IN(red_idx(k, 0, K, R, K2, formB)) : 0.0;
    St s = st_id(OP);
    for (long long q = lane; q < P; q += 32) s = st_comb(s, ws[q * K + k], OP);
    s = warp_red(s, OP);
    if (lane != 0) return;
{fin2}}}

extern "C" __global__ void __launch_bounds__(NT) k_napply({ssig}) {{
{chr(10).join(_scalars(em))}
{chr(10).join(lam)}
    const long long total = (long long)K * R;
    for (long long t = (long long)blockIdx.x * NT + threadIdx.x; t < total; t += (long long)gridDim.x * NT) {{
        const unsigned int kq = fdiv((unsigned int)t, (unsigned int)Rm, Rs);
        const long long k = kq, r = t - (long long)kq * R;
        const long long i = red_idx(k, r, K, R, K2, formB);
        {app}
        const float x = IN(i);
        out[i] = POST(i, {val});
    }}
}}
"""
            kernels.append(("k_norm", src))
        else:  # scan
            rev = bool(stage.params.get("reverse"))
            mul = op == 4
            sig = ", ".join(["float* __restrict__ out"] + prm + ["int K", "int R", "int K2"])
            src += f"""
#define COMB(a, b) ({'(a) * (b)' if mul else '(a) + (b)'})
#define IDENT {'1.0' if mul else '0.0'}
DEV long long scan_idx(long long k, long long r, long long R, long long K2) {{
    const long long rr = {'R - 1 - r' if rev else 'r'};
    return (k / K2) * R * K2 + rr * K2 + (k % K2);
}}

extern "C" __global__ void __launch_bounds__(NT) k_scan({sig}) {{
{chr(10).join(_scalars(em))}
{chr(10).join(lam)}
    if (G == 1) {{
        const long long k = (long long)blockIdx.x * NT + threadIdx.x;
        if (k >= K) return;
        double acc = IDENT;
        for (long long r = 0; r < R; ++r) {{
            const long long i = scan_idx(k, r, R, K2);
            acc = COMB(acc, (double)IN(i));
            out[i] = POST(i, (float)acc);
        }}
        return;
    }}
    // one block per line: chunks of NT * 4 elements, a thread scans 4 in registers, warps and the block
    // scan the thread totals, and a carry runs from chunk to chunk
    __shared__ double wsum[32];
    const long long k = blockIdx.x;
    const int t = threadIdx.x, lane = t & 31, w = t >> 5;
    double carry = IDENT;
    for (long long base = 0; base < R; base += (long long)NT * 4) {{
        double v[4];
        double tot = IDENT;
        #pragma unroll
        for (int j = 0; j < 4; ++j) {{
            const long long r = base + (long long)t * 4 + j;
            const double x = r < R ? (double)IN(scan_idx(k, r, R, K2)) : IDENT;
            tot = COMB(tot, x);
            v[j] = tot;
        }}
        double inc = tot;
        for (int o = 1; o < 32; o <<= 1) {{
            const double y = __shfl_up_sync(0xffffffffu, inc, o);
            if (lane >= o) inc = COMB(inc, y);
        }}
        if (lane == 31) wsum[w] = inc;
        __syncthreads();
        if (w == 0) {{
            double x = lane < NT / 32 ? wsum[lane] : IDENT;
            for (int o = 1; o < 32; o <<= 1) {{
                const double y = __shfl_up_sync(0xffffffffu, x, o);
                if (lane >= o) x = COMB(x, y);
            }}
            if (lane < NT / 32) wsum[lane] = x;
        }}
        __syncthreads();
        double before = __shfl_up_sync(0xffffffffu, inc, 1);
        if (lane == 0) before = IDENT;
        if (w > 0) before = COMB(wsum[w - 1], before);
        before = COMB(carry, before);
        #pragma unroll
        for (int j = 0; j < 4; ++j) {{
            const long long r = base + (long long)t * 4 + j;
            if (r < R) {{
                const long long i = scan_idx(k, r, R, K2);
                out[i] = POST(i, (float)COMB(before, v[j]));
            }}
        }}
        carry = COMB(carry, wsum[NT / 32 - 1]);
        __syncthreads();
    }}
}}
"""
            kernels.append(("k_scan", src))
    elif kind == "pool":
        is_max = stage.params["op"] == "max"
        sig = ", ".join(["float* __restrict__ out"] + prm + [f"int {n}" for n in _POOL_INTS] + ["int include_pad",
                                                                                            "int divisor", "int n"])
        src = head + f"""
extern "C" __global__ void __launch_bounds__(NT) k_pool({sig}) {{
{chr(10).join(_scalars(em))}
{chr(10).join(lam)}
    for (long long o = (long long)blockIdx.x * NT + threadIdx.x; o < n; o += (long long)gridDim.x * NT) {{
{_POOL_BODY.format(init='F_NEG_INF' if is_max else '0.0f', acc='if (x > acc) acc = x;' if is_max else 'acc += x;',
                   fin='acc' if is_max else 'acc / (float)cnt')}
        out[o] = POST(o, res);
    }}
}}
"""
        kernels.append(("k_pool", src))
    launcher = _launcher(program, stage, k, em, roots, knobs, "cuda")
    return kernels, launcher


_POOL_INTS = ("ID", "IH", "IW", "OD", "OH", "OW", "KD", "KH", "KW", "SD", "SH", "SW", "PD", "PH", "PW",
              "DD", "DH", "DW", "OWm", "OWs", "OHm", "OHs", "ODm", "ODs")
_POOL_BODY = """        unsigned int q = (unsigned int)o, q1;
        q1 = fdiv(q, (unsigned int)OWm, OWs); const int ow = (int)(q - q1 * (unsigned int)OW); q = q1;
        q1 = fdiv(q, (unsigned int)OHm, OHs); const int oh = (int)(q - q1 * (unsigned int)OH); q = q1;
        q1 = fdiv(q, (unsigned int)ODm, ODs); const int od = (int)(q - q1 * (unsigned int)OD); q = q1;
        const long long plane = (long long)q * ID * IH * IW;
        int d0 = od * SD - PD, h0 = oh * SH - PH, w0 = ow * SW - PW;
        const int d1 = IMIN(d0 + (KD - 1) * DD + 1, ID + PD), h1 = IMIN(h0 + (KH - 1) * DH + 1, IH + PH),
                  w1 = IMIN(w0 + (KW - 1) * DW + 1, IW + PW);
        const int padded = (d1 - d0) * (h1 - h0) * (w1 - w0);
        float acc = {init};
        int inside = 0;
        for (int a = 0; a < KD; ++a) {{
            const int id = d0 + a * DD;
            if (id < 0 || id >= ID) continue;
            for (int b = 0; b < KH; ++b) {{
                const int ih = h0 + b * DH;
                if (ih < 0 || ih >= IH) continue;
                for (int c = 0; c < KW; ++c) {{
                    const int iw = w0 + c * DW;
                    if (iw < 0 || iw >= IW) continue;
                    const float x = IN(plane + ((long long)id * IH + ih) * IW + iw);
                    {acc}
                    ++inside;
                }}
            }}
        }}
        const int cnt = divisor > 0 ? divisor : (include_pad ? padded : inside);
        const float res = {fin};"""


def _cuda_fin(bn: bool, out_t: str) -> str:
    if bn:
        return ("    const double mean = st_fin(s, 8, R, shift), var = st_var(s);\n"
                "    out[k] = (float)mean; out[K + k] = (float)var;\n"
                "    if (upd) {\n"
                "        rm[k] = (float)((1.0 - mom) * rm[k] + mom * mean);\n"
                "        rv[k] = (float)((1.0 - mom) * rv[k] + mom * var * (double)s.c / (s.c > 1.0 ? s.c - 1.0 : 1.0));\n"
                "    }")
    if out_t == "long long":
        return "    out[k] = (long long)s.i;"
    return "    out[k] = POST(k, (float)st_fin(s, OP, R, shift));"


# ------------------------------------------------------------------------------------------------ launchers


def _launcher(program: Program, stage: Stage, k: int, em: _Emit, roots: dict[str, int], knobs: Knobs,
              backend: str) -> str:
    """`_stage{k}(T, S, *P)`: shapes, layout, broadcast maps and the launch, all from the runtime tensors."""
    inp_prog = em.nodes[:roots["_inp_nodes"]]
    post_prog = em.nodes
    lines = [f"def _stage{k}(T, S, *P):",
             "    T = [t.contiguous() for t in T]",
             "    dev = T[0].device",
             "    tshapes = [tuple(t.shape) for t in T]",
             f"    ish = _shapes({inp_prog!r}, tshapes, ())",
             f"    xshape = ish[{roots['inp']}]"]
    kind = stage.kind
    out_dtype = "torch.int64" if stage.out_dtype == "long" else "torch.float32"
    if kind == "map":
        lines.append("    oshape = xshape")
    elif kind in ("reduce", "norm", "scan"):
        form_b = stage.params.get("form") == "B"
        if stage.params.get("form") == "G":
            lines += ["    groups = int(P[0])", "    K, R, K2 = xshape[0] * groups, math.prod(xshape) // max(xshape[0] * groups, 1), 1",
                      "    if xshape[1] % groups:", "        raise ValueError('channels not divisible by groups')"]
        elif form_b:
            lines += ["    rank = len(xshape)", "    K, K2 = xshape[1], math.prod(xshape[2:])",
                      "    R = xshape[0] * K2"]
        else:
            lines += ["    dims = _dims(P[0], len(xshape))", "    K, R, K2 = _layout(xshape, dims)"]
        if kind == "reduce":
            if stage.params.get("op") == "meanvar":
                lines.append("    oshape = (2, K)")
            else:
                lines += ["    keep = bool(P[1])",
                          "    oshape = tuple(1 if i in dims else s for i, s in enumerate(xshape) if keep or i not in dims)"]
        else:
            lines.append("    oshape = xshape")
    elif kind == "pool":
        lines += [f"    oshape, geo = _pool_geom(xshape, {stage.params['nd']}, P[0], P[1], P[2], P[3], bool(P[4]))"]
    lines += [f"    out = torch.empty(oshape, device=dev, dtype={out_dtype})"]
    lines += ["    n = out.numel()", "    _check_n(n)", "    if n == 0:", "        return out"]
    if kind in ("reduce", "norm", "scan"):
        lines += ["    _check_n(K, R, K2)"]
    lines += [f"    sh = _shapes({post_prog!r}, tshapes, oshape)",
              f"    eargs = _edge_args({[tuple(e) for e in em.edges]!r}, sh)",
              "    _check_n(*eargs)",
              "    sargs = [float(s) for s in S]"]
    if backend == "cuda":
        lines += _cuda_launch(stage, k, knobs)
    else:
        lines += _cpp_launch(stage, k)
    lines.append("    return out")
    return "\n".join(lines) + "\n"


def _cuda_launch(stage: Stage, k: int, knobs: Knobs) -> list[str]:
    nt = knobs["block"]
    kind = stage.kind
    mapping = knobs.get("mapping", "auto")
    lines = ["    sms = _sms(dev)"]
    if kind == "map":
        unroll = knobs.get("unroll", 1)
        lines += [f"    blocks = (n + {nt * unroll} - 1) // {nt * unroll}"]
        if knobs.get("grid") == "stride":
            lines += ["    blocks = min(blocks, sms * 8)"]
        lines += [f"    _kernel({k}, 'k_map', 1)(grid=(blocks, 1, 1), block=({nt}, 1, 1), "
                  "args=[out, *T, *sargs, *eargs, n])"]
        return lines
    if kind == "pool":
        lines += [f"    blocks = min((n + {nt - 1}) // {nt}, sms * 16)",
                  "    inc = int(bool(P[5])) if len(P) > 5 else 1",
                  "    div = int(P[6]) if len(P) > 6 and P[6] else 0",
                  f"    _kernel({k}, 'k_pool', 1)(grid=(blocks, 1, 1), block=({nt}, 1, 1), "
                  "args=[out, *T, *sargs, *eargs, *geo, inc, div, n])"]
        return lines
    # groups: 1 thread, a warp, or the whole block per output / row
    if mapping == "auto":
        lines += ["    if K2 > 1 and K >= sms * 64:", "        g = 1",
                  "    elif R <= 1024 or K >= sms * 64:", "        g = 32", "    else:", f"        g = {nt}"]
        if kind == "scan":
            lines = ["    sms = _sms(dev)", f"    g = 1 if K2 > 1 or K >= sms * {nt} else {nt}"]
    else:
        g = {"thread": "1", "warp": "32", "block": str(nt)}[mapping]
        if kind == "scan" and mapping == "warp":
            g = "1"
        lines += [f"    g = {g}"]
    if kind == "scan":
        lines += ["    if K2 > 1 and g != 1:", "        g = 1",
                  f"    blocks = (K + {nt - 1}) // {nt} if g == 1 else K",
                  f"    _kernel({k}, 'k_scan', g)(grid=(blocks, 1, 1), block=({nt}, 1, 1), args=[out, *T, *sargs, *eargs, K, R, K2])"]
        return lines
    per_block = f"({nt} // g)"
    if kind == "norm":
        form_b = int(stage.params.get("form") == "B")
        lines += ["    eps = float(P[1]) if len(P) > 1 else 0.0"]
        if knobs.get("split", True):
            lines += ["    if K < sms * 2 and R >= 65536 and K * R < 2**31:",
                      "        parts = max(1, min(R // 8192, (sms * 4 + K - 1) // K, 1024))",
                      "        ws = torch.empty((K * parts * 32 + 1,), device=dev, dtype=torch.uint8)",
                      "        stats = torch.empty((2 * K,), device=dev, dtype=torch.float32)",
                      f"        a = [out, *T, *sargs, *eargs, eps, ws, stats, K, R, K2, {form_b}, *_magic(K2), parts, *_magic(R)]",
                      f"        _kernel({k}, 'k_npart', {nt})(grid=(K * parts, 1, 1), block=({nt}, 1, 1), args=a)",
                      f"        _kernel({k}, 'k_nfin', 32)(grid=((K + {nt // 32 - 1}) // {nt // 32}, 1, 1), block=({nt}, 1, 1), args=a)",
                      f"        blocks = min((K * R + {nt - 1}) // {nt}, sms * 16)",
                      f"        _kernel({k}, 'k_napply', 1)(grid=(blocks, 1, 1), block=({nt}, 1, 1), args=a)",
                      "        return out"]
        lines += [f"    blocks = (K + {per_block} - 1) // {per_block}",
                  f"    _kernel({k}, 'k_norm', g)(grid=(blocks, 1, 1), block=({nt}, 1, 1), "
                  f"args=[out, *T, *sargs, *eargs, eps, K, R, K2, {form_b}, *_magic(K2)])"]
        return lines
    bn = stage.params.get("op") == "meanvar"
    form_b = int(stage.params.get("form") == "B")
    split = knobs.get("split", False)
    lines += ["    parts = 1"]
    if split:
        lines += [f"    if R >= 8192 and K * {per_block} < sms * 4 * {nt}:",
                  f"        parts = max(1, min(R // 4096, (sms * 8 * {per_block} + K - 1) // K, 4096))"]
    if bn:
        lines += ["    bn = P[0]",
                  "    if not bn.training and bn.track_running_stats and bn.running_mean is not None:",
                  "        return torch.stack([bn.running_mean, bn.running_var]).to(torch.float32)",
                  "    upd = int(bool(bn.training and bn.track_running_stats and bn.running_mean is not None))",
                  "    mom = 0.0",
                  "    rm = bn.running_mean if upd else out",
                  "    rv = bn.running_var if upd else out",
                  "    if upd:",
                  "        bn.num_batches_tracked.add_(1)",
                  "        mom = bn.momentum if bn.momentum is not None else 1.0 / float(bn.num_batches_tracked)",
                  "    extra = [rm, rv, float(mom), upd]"]
    else:
        lines += ["    extra = []"]
    lines += ["    ws = torch.empty((K * parts * 32 + 1,), device=dev, dtype=torch.uint8) if parts > 1 else out",
              "    units = K * parts",
              f"    blocks = (units + {per_block} - 1) // {per_block}",
              f"    common = [out, *T, *sargs, *eargs, ws, *extra, K, R, K2, {form_b}, parts, *_magic(K2)]",
              f"    _kernel({k}, 'k_red', g)(grid=(blocks, 1, 1), block=({nt}, 1, 1), args=common)",
              "    if parts > 1:",
              f"        _kernel({k}, 'k_fin', 32)(grid=((K + {nt // 32 - 1}) // {nt // 32}, 1, 1), block=({nt}, 1, 1), "
              "args=common)"]
    return lines


def _cpp_launch(stage: Stage, k: int) -> list[str]:
    kind = stage.kind
    if kind == "map":
        return [f"    _ext.stage{k}(out, T, sargs, eargs, [n])"]
    if kind == "pool":
        return ["    inc = int(bool(P[5])) if len(P) > 5 else 1",
                "    div = int(P[6]) if len(P) > 6 and P[6] else 0",
                f"    _ext.stage{k}(out, T, sargs, eargs, [*geo, inc, div, n])"]
    if kind == "scan":
        return [f"    _ext.stage{k}(out, T, sargs, eargs, [K, R, K2])"]
    form_b = int(stage.params.get("form") == "B")
    if kind == "norm":
        return ["    eps = float(P[1]) if len(P) > 1 else 0.0",
                f"    _ext.stage{k}(out, T, sargs + [eps], eargs, [K, R, K2, {form_b}, *_magic(K2)])"]
    if stage.params.get("op") == "meanvar":
        return ["    bn = P[0]",
                "    if not bn.training and bn.track_running_stats and bn.running_mean is not None:",
                "        return torch.stack([bn.running_mean, bn.running_var]).to(torch.float32)",
                "    upd = int(bool(bn.training and bn.track_running_stats and bn.running_mean is not None))",
                "    mom = 0.0",
                "    if upd:",
                "        bn.num_batches_tracked.add_(1)",
                "        mom = bn.momentum if bn.momentum is not None else 1.0 / float(bn.num_batches_tracked)",
                "    rs = [bn.running_mean, bn.running_var] if upd else [out, out]",
                f"    _ext.stage{k}(out, T + rs, sargs + [float(mom)], eargs, [K, R, K2, {form_b}, upd, *_magic(K2)])"]
    return [f"    _ext.stage{k}(out, T, sargs, eargs, [K, R, K2, {form_b}, *_magic(K2)])"]


# ------------------------------------------------------------------------------------------------ C++


_CPP_HEAD = r'''#include <torch/extension.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>
#define DEV static inline
#define LD(p, i) ((float)(p)[i])
#define D_INF std::numeric_limits<double>::infinity()
#define UMULHI(a, b) ((unsigned int)(((unsigned long long)(a) * (unsigned long long)(b)) >> 32))
DEV unsigned int fdiv(unsigned int n, unsigned int m, int s) { return (UMULHI(n, m) + n) >> s; }
#define F_NEG_INF (-std::numeric_limits<float>::infinity())
#define IMIN(a, b) ((a) < (b) ? (a) : (b))
#define EXPF std::exp
#define LOGF std::log
using std::min;
using std::max;
'''


def _cpp_stage(program: Program, stage: Stage, k: int, knobs: Knobs) -> tuple[str, str]:
    """The C++ function `stage{k}` (OpenMP) and its Python launcher."""
    em, roots = _prepare_stage(program, stage, "cpp")
    lam = _lambdas(em, stage, roots)
    simd = "        #pragma omp simd\n" if knobs.get("simd") else ""
    unpack = []
    for n, tid in enumerate(em.tslots):
        ctype = {"float": "float", "long": "int64_t", "bool": "bool"}[program.tensors[tid].dtype]
        unpack.append(f"    const {ctype}* __restrict__ P{n} = T[{n}].data_ptr<{ctype}>();")
    unpack += [f"    const float S{j} = (float)S[{j}];" for j in range(len(em.sslots))]
    ne = 0
    for e, ed in enumerate(em.edges):
        for r in range(len(ed[2])):
            for c in _EDGE_FIELDS:
                unpack.append(f"    const int64_t B{e}_{r}{c} = E[{ne}];")
                ne += 1
    kind = stage.kind
    out_t = "int64_t" if stage.out_dtype == "long" else "float"
    pre = "\n".join(unpack + lam)
    if kind == "map":
        body = f"""    const int64_t n = I[0];
    float* __restrict__ out = outt.data_ptr<float>();
    #pragma omp parallel for{' simd' if knobs.get('simd') else ''} schedule(static)
    for (int64_t i = 0; i < n; ++i) out[i] = POST(i, IN(i));"""
    elif kind == "pool":
        is_max = stage.params["op"] == "max"
        names = ", ".join(f"{nm} = (int)I[{j}]" for j, nm in enumerate(_POOL_INTS))
        body = f"""    const int {names};
    const int include_pad = (int)I[24], divisor = (int)I[25];
    const int64_t n = I[26];
    float* __restrict__ out = outt.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < n; ++o) {{
{_POOL_BODY.format(init='F_NEG_INF' if is_max else '0.0f', acc='if (x > acc) acc = x;' if is_max else 'acc += x;',
                   fin='acc' if is_max else 'acc / (float)cnt')}
        out[o] = POST(o, res);
    }}"""
    elif kind == "scan":
        mul = stage.params["op"] == "prod"
        rev = bool(stage.params.get("reverse"))
        body = f"""    const int64_t K = I[0], R = I[1], K2 = I[2];
    float* __restrict__ out = outt.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < K; ++k) {{
        double acc = {'1.0' if mul else '0.0'};
        for (int64_t r = 0; r < R; ++r) {{
            const int64_t rr = {'R - 1 - r' if rev else 'r'};
            const int64_t i = (k / K2) * R * K2 + rr * K2 + (k % K2);
            acc = acc {'*' if mul else '+'} (double)IN(i);
            out[i] = POST(i, (float)acc);
        }}
    }}"""
    elif kind == "norm":
        so = stage.params["op"]
        two = knobs.get("passes") == "two_pass"
        if so in ("softmax", "log_softmax"):
            stats = ("        St s = st_id(7);\n"
                     "        for (int64_t r = 0; r < R; ++r) st_upd(s, 7, IN(red_idx(k, r, K, R, K2, formB)), r, 0.0);\n"
                     "        const float m = (float)s.a;\n")
            stats += ("        const float inv = (float)(1.0 / s.b);\n" if so == "softmax"
                      else "        const float lse = (float)(s.a + std::log(s.b));\n")
            val = "std::exp(x - m) * inv" if so == "softmax" else "x - lse"
        elif two:
            stats = (f"        double sum = 0.0;\n{simd}"
                     "        for (int64_t r = 0; r < R; ++r) sum += (double)IN(red_idx(k, r, K, R, K2, formB));\n"
                     f"        const double mean = sum / (double)R;\n        double q = 0.0;\n{simd}"
                     "        for (int64_t r = 0; r < R; ++r) { const double d = (double)IN(red_idx(k, r, K, R, K2, formB)) - mean; q += d * d; }\n"
                     "        const float meanf = (float)mean, rstd = (float)(1.0 / std::sqrt(q / (double)R + eps));\n")
            val = "(x - meanf) * rstd"
        else:
            stats = ("        const double shift = R > 0 ? (double)IN(red_idx(k, 0, K, R, K2, formB)) : 0.0;\n"
                     "        St s = st_id(8);\n"
                     "        for (int64_t r = 0; r < R; ++r) st_upd(s, 8, IN(red_idx(k, r, K, R, K2, formB)), r, shift);\n"
                     "        const float meanf = (float)st_fin(s, 8, R, shift), rstd = (float)(1.0 / std::sqrt(st_var(s) + eps));\n")
            val = "(x - meanf) * rstd"
        body = f"""    const int64_t K = I[0], R = I[1], K2 = I[2];
    const int formB = (int)I[3];
    const int K2m = (int)I[I.size() - 2], K2s = (int)I[I.size() - 1];
    const double eps = S[S.size() - 1];
    float* __restrict__ out = outt.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < K; ++k) {{
{stats}{simd}        for (int64_t r = 0; r < R; ++r) {{
            const int64_t i = red_idx(k, r, K, R, K2, formB);
            const float x = IN(i);
            out[i] = POST(i, {val});
        }}
    }}"""
    else:
        op = _RED_OPS[stage.params["op"]]
        bn = op == 8
        if bn:
            fin = ("        const double mean = st_fin(s, 8, R, shift), var = st_var(s);\n"
                   "        out[k] = (float)mean; out[K + k] = (float)var;\n"
                   "        if (upd) {\n"
                   "            rm[k] = (float)((1.0 - mom) * rm[k] + mom * mean);\n"
                   "            rv[k] = (float)((1.0 - mom) * rv[k] + mom * var * s.c / (s.c > 1.0 ? s.c - 1.0 : 1.0));\n"
                   "        }\n")
            bn_pre = (f"    float* rm = T[{len(em.tslots)}].data_ptr<float>();\n"
                      f"    float* rv = T[{len(em.tslots) + 1}].data_ptr<float>();\n"
                      "    const double mom = S[S.size() - 1];\n    const int upd = (int)I[4];\n")
        else:
            fin = ("        out[k] = (int64_t)s.i;\n" if out_t == "int64_t"
                   else "        out[k] = POST(k, (float)st_fin(s, OP, R, shift));\n")
            bn_pre = ""
        body = f"""    const int64_t K = I[0], R = I[1], K2 = I[2];
    const int formB = (int)I[3];
    const int K2m = (int)I[I.size() - 2], K2s = (int)I[I.size() - 1];
{bn_pre}    {out_t}* __restrict__ out = outt.data_ptr<{out_t}>();
    #pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < K; ++k) {{
        const double shift = OP == 8 && R > 0 ? (double)IN(red_idx(k, 0, K, R, K2, formB)) : 0.0;
        St s = st_id(OP);
        for (int64_t r = 0; r < R; ++r) st_upd(s, OP, IN(red_idx(k, r, K, R, K2, formB)), r, shift);
{fin}    }}"""
    opdef = ""
    if kind == "reduce":
        opdef = f"#define OP {_RED_OPS[stage.params['op']]}\n"
    fn = (f"{opdef}void stage{k}(torch::Tensor outt, std::vector<torch::Tensor> T, std::vector<double> S, "
          f"std::vector<int64_t> E, std::vector<int64_t> I) {{\n{pre}\n{body}\n}}\n"
          + ("#undef OP\n" if opdef else ""))
    return fn, _launcher(program, stage, k, em, roots, knobs, "cpp")


# ------------------------------------------------------------------------------------------------ rendering


def _with_bias(program: Program, knobs: Knobs) -> tuple[Program, bool]:
    """The program with the producer's bias added in the stages that read its output (bias=epilogue)."""
    if knobs.get("bias") != "epilogue":
        return program, False
    y, b = program.prefix_tensor, program.bias_leaf
    yshape = program.tensors[y].shape

    def fix(lf: E) -> E:
        if lf.kind == "leaf" and lf.val == y:
            return E("op", yshape, op="add", args=(lf, E("leaf", program.tensors[b].shape, val=b)))
        return lf

    stages = [Stage(s.kind, replace(s.inp, fix), s.out_shape, s.params, s.out_dtype,
                    None if s.post is None else replace(s.post, fix), s.out) for s in program.stages]
    return Program(program.tensors, stages, program.result, program.prefix_lines, program.prefix_has_bias,
                   program.prefix_nobias_lines, program.bias_leaf, program.prefix_tensor), True


def _forward(program: Program, moved: bool) -> str:
    lines = list(program.prefix_nobias_lines if moved else program.prefix_lines)
    for k, st in enumerate(program.stages):
        em = _Emit(program, "cuda")
        em.flatten(st.inp)
        if st.post is not None:
            em.flatten(st.post)
        tens = ", ".join(program.tensors[t].expr for t in em.tslots)
        scal = ", ".join(em.sslots)
        pp = _py_params(st)
        lines.append(f"        {program.tensors[st.out].expr} = _stage{k}([{tens}], [{scal}]{''.join(', ' + p for p in pp)})")
    lines.append(f"        return {program.tensors[program.result].expr}")
    return "\n".join(lines)


def _py_params(st: Stage) -> list[str]:
    p = st.params
    if st.kind in ("reduce",):
        if p.get("op") == "meanvar":
            return [p["bn"]]
        return [p["dims"], str(p.get("keepdim", False))]
    if st.kind == "norm":
        first = p["groups"] if p.get("form") == "G" else p["dims"]
        return [first, p.get("eps", "0.0")]
    if st.kind == "scan":
        return [p["dim"]]
    if st.kind == "pool":
        out = [p["kernel"], p["stride"], p["padding"], p["dilation"], p["ceil"]]
        if p["op"] == "avg":
            out += [p["include_pad"], p["divisor"]]
        return out
    return []


_CUDA_PY = '''
_SMS = {}
_KERNELS = {}


def _sms(dev):
    if dev.index not in _SMS:
        _SMS[dev.index] = torch.cuda.get_device_properties(dev).multi_processor_count
    return _SMS[dev.index]


def _kernel(stage, name, g):
    """Compiled on first use (NVRTC); G, the threads that share one output, is a compile-time constant."""
    key = (stage, name, g)
    if key not in _KERNELS:
        src = _SOURCES[stage].replace("{G_DEFINE}", f"#define G {g}\\n")
        _KERNELS[key] = torch.cuda._compile_kernel(src, name)
    return _KERNELS[key]
'''


def _cuda(pattern: Pattern, knobs: Knobs) -> str:
    program, moved = _with_bias(_program(pattern), knobs)
    sources, launchers = [], []
    for k, st in enumerate(program.stages):
        kernels, launcher = _cuda_stage(program, st, k, knobs)
        src = kernels[0][1]
        if "{G_DEFINE}" not in src:
            src = "{G_DEFINE}" + src
        sources.append(src)
        launchers.append(launcher)
    srcs = ",\n".join(f'    r"""{s}"""' for s in sources)
    body = f"_SOURCES = [\n{srcs},\n]\n{_RUNTIME}\n{_CUDA_PY}\n\n" + "\n\n".join(launchers)
    summary = (f"Plain CUDA kernels compiled by NVRTC (torch.cuda._compile_kernel), one per stage "
               f"({', '.join(program.stage_kinds())}); {knobs['block']} threads per block"
               f"{', fast exp/log' if knobs.get('fast_math') else ''}"
               f"{', reductions mapped ' + knobs['mapping'] if knobs.get('mapping', 'auto') != 'auto' else ''}.")
    return frame(pattern, "cuda", FAMILY, knobs, summary, body, _forward(program, moved), "import math")


def _cpp(pattern: Pattern, knobs: Knobs) -> str:
    program, moved = _with_bias(_program(pattern), knobs)
    fns, launchers = [], []
    for k, st in enumerate(program.stages):
        fn, launcher = _cpp_stage(program, st, k, knobs)
        fns.append(fn)
        launchers.append(launcher)
    source = _CPP_HEAD + _C_COMMON + "\n" + "\n".join(fns)
    flags = ["-O3", "-fopenmp"] + (["-march=native"] if knobs.get("march") == "native" else [])
    body = f'''_CPP_SOURCE = r"""
{source}"""

_ext = load_inline(
    name="{ext_name('htam_ex_staged', source + repr(flags))}",
    cpp_sources=_CPP_SOURCE,
    functions={[f"stage{k}" for k in range(len(program.stages))]!r},
    extra_cflags={flags!r},
    extra_ldflags=["-fopenmp"],
)
{_RUNTIME}

''' + "\n\n".join(launchers)
    summary = (f"OpenMP C++ loops (load_inline), one per stage ({', '.join(program.stage_kinds())}), "
               f"with double accumulators{', omp simd' if knobs.get('simd') else ''}.")
    return frame(pattern, "cpp", FAMILY, knobs, summary, body, _forward(program, moved),
                 "import math\n\nfrom torch.utils.cpp_extension import load_inline")


def render(pattern: Pattern, backend: str, knobs: Knobs) -> str:
    if backend == "cuda":
        return _cuda(pattern, knobs)
    if backend == "cpp":
        return _cpp(pattern, knobs)
    space(pattern, backend)  # raises for triton
    raise UnsupportedTask(f"exemplar coder: no {backend} rendering of staged programs")


__all__ = ["FAMILY", "DIRECTION_MOVES", "curated", "default", "moves", "render", "safe", "space"]
