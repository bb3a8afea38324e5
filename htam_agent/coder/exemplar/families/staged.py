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
of the same arithmetic with the cpp backend's launch knobs (cpp_launch.py: threads, schedule, omp simd,
accumulators, loop order; read at call time, so they share one build) and -march=native.

This module holds the family's space, default, moves and curated variants, and assembles the file; each stage
kind's kernels and launch lines come from its emitter (`stages/<kind>.py`) and templates (`templates/`).
"""

from __future__ import annotations

import math
from typing import Any

from ...base import UnsupportedTask
from .. import cpp_launch
from ..common import MAX_VARIANTS, NEXT, Knobs, Variants, ext_name, frame
from ..program import E, Program, Stage, replace
from ..spec import Pattern
from ..stages import emitter
from ..stages.base import EDGE_FIELDS, Emit, StageCtx, prepare_stage
from ..templating import fill, raw

FAMILY = "staged"


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
        s = {**cpp_launch.launch_space(), "march": ("generic", "native")}
        if _has(p, "map") or _has(p, "norm"):
            s["simd"] = (False, True)
        if _has(p, "reduce"):
            s["acc"] = (1, 4)
        if _strided_reduction(p):
            s["order"] = ("row", "tile")
    if _has(p, "norm", ("standardize",)):
        s["passes"] = ("one_pass", "two_pass")
    if _bias_movable(p):
        s["bias"] = ("gemm", "epilogue")
    return s


def _strided_reduction(p: Program) -> bool:
    """A reduce stage that keeps the input's last dim (so its reads leave an inner stride, K2 > 1) at the traced
    shapes: the one case where the cpp kernel's tile loop order reads memory differently (elsewhere it would
    be a name, not a variant). Read from the traced shapes, since the dims are often runtime expressions."""
    for st in p.stages:
        if st.kind != "reduce" or st.params.get("form") in ("B", "G") or st.params.get("op") == "meanvar":
            continue
        shape, out = tuple(st.inp.shape or ()), tuple(st.out_shape or ())
        if shape and out and shape[-1] > 1 and out[-1] == shape[-1] and math.prod(out) < math.prod(shape):
            return True
    return False


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
        "pm_grid_stride_loop": {"grid": "stride", "sched": "dynamic"},
        "lo_persistent_kernel": {"grid": "stride"},
        "oc_thread_coarsening": {"unroll": 4},
        "it_multiple_accumulators": {"unroll": 4, "acc": 4},
        "ma_coalesced_layout": {"order": "tile"},
        "ma_avoid_redundant_loads": {"order": "tile"},
        "oc_block_size": {"block": NEXT},
        "oc_autotune_dispatch": {"block": NEXT, "sched": NEXT},
        "oc_launch_bounds_registers": {"block": NEXT},
        "it_fast_math_intrinsics": {"fast_math": True, "march": "native"},
        "fr_epilogue_fusion": {"bias": "epilogue"},
        "fr_elementwise_chain_fusion": {"bias": "epilogue"},
        "lo_horizontal_fusion": {"bias": "epilogue"},
        "ma_vectorized_loads": {"simd": True, "unroll": 4},
        "pm_split_k": {"split": True},
        "pm_parallel_scan": {"mapping": "block"},
        "oc_wave_quantization": {"split": True, "grid": "stride", "sched": "guided"},
        "lo_small_problem_path": {"split": False, "threads": "one"},
    }


DIRECTION_MOVES: dict[str, Knobs] = {  # cpp: knobs absent from a backend's space are ignored
    "memory_access": {"unroll": NEXT, "simd": NEXT},
    "parallel_mapping": {"mapping": NEXT, "split": NEXT, "order": NEXT},
    "occupancy_tuning": {"block": NEXT, "sched": NEXT},
    "instruction_throughput": {"fast_math": NEXT, "march": NEXT, "acc": NEXT},
    "fusion_restructuring": {"bias": NEXT, "passes": NEXT},
    "launch_overhead": {"grid": NEXT, "split": NEXT, "threads": NEXT},
    "data_reuse": {"passes": NEXT, "order": NEXT},
}


def curated(pattern: Pattern, backend: str) -> list[Knobs]:
    """The default first, then single knob changes, then a few combinations (at most MAX_VARIANTS)."""
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
        return cpp_launch.curated(base, sp, ("simd", "march", "acc", "order", "passes", "bias"))
    return out[:MAX_VARIANTS]


# ------------------------------------------------------------------------------------------------ emitting
# One emitter per stage kind (stages/<kind>.py) fills its templates (templates/<kind>.cu.tmpl, .cpp.tmpl);
# this module builds each stage's context, the launcher's shared part, forward and the candidate file.


def _ctx(program: Program, stage: Stage, k: int, knobs: Knobs, dialect: str) -> StageCtx:
    em, roots = prepare_stage(program, stage, dialect)
    return StageCtx(program, stage, k, knobs, em, roots)


def _cuda_stage(program: Program, stage: Stage, k: int, knobs: Knobs) -> tuple[str, str]:
    """The CUDA source of one stage (its kernels) and the Python launcher `_stage{k}`."""
    ctx = _ctx(program, stage, k, knobs, "cuda_fast" if knobs.get("fast_math", False) else "cuda")
    return emitter(stage.kind).cuda_source(ctx), _launcher(ctx, "cuda")


def _cpp_stage(program: Program, stage: Stage, k: int, knobs: Knobs) -> tuple[str, str]:
    """The C++ function `stage{k}` (OpenMP) and its Python launcher."""
    ctx = _ctx(program, stage, k, knobs, "cpp")
    em = ctx.em
    unpack = []
    for n, tid in enumerate(em.tslots):
        ctype = {"float": "float", "long": "int64_t", "bool": "bool"}[program.tensors[tid].dtype]
        unpack.append(f"    const {ctype}* __restrict__ P{n} = T[{n}].data_ptr<{ctype}>();")
    unpack += [f"    const float S{j} = (float)S[{j}];" for j in range(len(em.sslots))]
    ne = 0
    for e, ed in enumerate(em.edges):
        for r in range(len(ed[2])):
            for c in EDGE_FIELDS:
                unpack.append(f"    const int64_t B{e}_{r}{c} = E[{ne}];")
                ne += 1
    kind = emitter(stage.kind)
    opdef = kind.cpp_opdef(stage) if hasattr(kind, "cpp_opdef") else ""
    fn = fill("stage.cpp.tmpl", "function", opdef=opdef, k=k, pre="\n".join(unpack + [ctx.lambdas]),
              body=kind.cpp_body(ctx), undef="#undef OP\n" if opdef else "")
    return fn, _launcher(ctx, "cpp")


# ------------------------------------------------------------------------------------------------ launchers


def _launcher(ctx: StageCtx, backend: str) -> str:
    """`_stage{k}(T, S, *P)`: shapes, layout, broadcast maps and the launch, all from the runtime tensors."""
    em, roots, stage, k = ctx.em, ctx.roots, ctx.stage, ctx.k
    kind = emitter(stage.kind)
    inp_prog = em.nodes[:roots["_inp_nodes"]]
    post_prog = em.nodes
    lines = [f"def _stage{k}(T, S, *P):",
             "    T = [t.contiguous() for t in T]",
             "    dev = T[0].device",
             "    tshapes = [tuple(t.shape) for t in T]",
             f"    ish = _shapes({inp_prog!r}, tshapes, ())",
             f"    xshape = ish[{roots['inp']}]"]
    out_dtype = "torch.int64" if stage.out_dtype == "long" else "torch.float32"
    lines += kind.shape_lines(stage)
    lines += [f"    out = torch.empty(oshape, device=dev, dtype={out_dtype})"]
    lines += ["    n = out.numel()", "    _check_n(n)", "    if n == 0:", "        return out"]
    if kind.LAYOUT:
        lines += ["    _check_n(K, R, K2)"]
    lines += [f"    sh = _shapes({post_prog!r}, tshapes, oshape)",
              f"    eargs = _edge_args({[tuple(e) for e in em.edges]!r}, sh)",
              "    _check_n(*eargs)",
              "    sargs = [float(s) for s in S]"]
    lines += kind.cuda_launch(ctx) if backend == "cuda" else kind.cpp_launch(ctx)
    lines.append("    return out")
    return "\n".join(lines) + "\n"


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
        em = Emit(program, "cuda")
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
    """The stage's Python-side parameters in forward (dims, eps, window sizes), from its kind's emitter."""
    return emitter(st.kind).py_params(st)


def _cuda(pattern: Pattern, knobs: Knobs) -> str:
    program, moved = _with_bias(_program(pattern), knobs)
    sources, launchers = [], []
    for k, st in enumerate(program.stages):
        src, launcher = _cuda_stage(program, st, k, knobs)
        if "{G_DEFINE}" not in src:
            src = "{G_DEFINE}" + src
        sources.append(src)
        launchers.append(launcher)
    srcs = ",\n".join(f'    r"""{s}"""' for s in sources)
    body = f"_SOURCES = [\n{srcs},\n]\n{raw('runtime.py.tmpl')}\n{raw('cuda_runtime.py.tmpl')}\n\n" + "\n\n".join(launchers)
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
    source = raw("cpp_head.cpp.tmpl") + raw("cpp_cfg.cpp.tmpl") + raw("common.c.tmpl") + "\n" + "\n".join(fns)
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
{raw("runtime.py.tmpl")}
{cpp_launch.cfg_line(knobs)}

''' + "\n\n".join(launchers)
    summary = (f"OpenMP C++ loops (load_inline), one per stage ({', '.join(program.stage_kinds())}), "
               f"with double accumulators{', omp simd' if knobs.get('simd') else ''}"
               f"{', 4 independent accumulators per reduction' if knobs.get('acc', 1) > 1 else ''}"
               f"{', strided reductions swept in tiles of 64 outputs' if knobs.get('order') == 'tile' else ''}"
               f"{', one thread' if knobs.get('threads') == 'one' else ''}"
               f"{', ' + knobs['sched'] + ' schedule' if knobs.get('sched', 'static') != 'static' else ''}.")
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
