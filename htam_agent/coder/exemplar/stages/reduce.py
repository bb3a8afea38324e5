"""The reduce stage: sum/mean/max/min/prod/arg-reductions/logsumexp over adjacent dims, and BatchNorm's
mean-and-variance (which also updates the running buffers) (templates/reduce.cu.tmpl, reduce.cpp.tmpl; the
result store, shared by both, is reduce_fin.c.tmpl)."""

from __future__ import annotations

from ..program import Stage
from ..templating import fill, raw
from .base import RED_OPS, StageCtx, group_lines, layout_lines, reduce_fin

KIND = "reduce"
LAYOUT = True


def _bn(stage: Stage) -> bool:
    return stage.params.get("op") == "meanvar"


def shape_lines(stage: Stage) -> list[str]:
    if _bn(stage):
        return layout_lines(stage) + ["    oshape = (2, K)"]
    return layout_lines(stage) + [
        "    keep = bool(P[1])",
        "    oshape = tuple(1 if i in dims else s for i, s in enumerate(xshape) if keep or i not in dims)"]


def py_params(stage: Stage) -> list[str]:
    p = stage.params
    if _bn(stage):
        return [p["bn"]]
    return [p["dims"], str(p.get("keepdim", False))]


def _fin(stage: Stage, indent: str, out_t: str, count: str) -> str:
    if _bn(stage):
        return reduce_fin("bn", indent, count=count)
    if stage.out_dtype == "long":
        return reduce_fin("index", indent, out_t=out_t)
    return reduce_fin("value", indent)


def cuda_source(ctx: StageCtx) -> str:
    st = ctx.stage
    extra = ["St* __restrict__ ws", "float* __restrict__ rm", "float* __restrict__ rv", "double mom",
             "int upd"] if _bn(st) else ["St* __restrict__ ws"]
    sig = ", ".join([f"{ctx.out_t}* __restrict__ out"] + ctx.params + extra
                    + ["int K", "int R", "int K2", "int formB", "int P", "int K2m", "int K2s"])
    return ctx.cuda_stateful_head(RED_OPS.get(st.params.get("op", ""), 0)) + fill(
        "reduce.cu.tmpl", "kernels", sig=sig, scalars=ctx.scalars, lambdas=ctx.lambdas,
        fin=_fin(st, "    ", ctx.out_t, "(double)s.c"))


def _bn_launch(cuda: bool) -> list[str]:
    """The BatchNorm statistics' launcher lines (templates/bn_launch.py.tmpl), the same on both backends."""
    mid = ["    rm = bn.running_mean if upd else out", "    rv = bn.running_var if upd else out"] if cuda else []
    return raw("bn_launch.py.tmpl", "head").split("\n") + mid + raw("bn_launch.py.tmpl", "momentum").split("\n")


def cuda_launch(ctx: StageCtx) -> list[str]:
    nt, k, knobs, st = ctx.knobs["block"], ctx.k, ctx.knobs, ctx.stage
    per_block = f"({nt} // g)"
    form_b = int(st.params.get("form") == "B")
    lines = group_lines(KIND, knobs) + ["    parts = 1"]
    if knobs.get("split", False):
        lines += [f"    if R >= 8192 and K * {per_block} < sms * 4 * {nt}:",
                  f"        parts = max(1, min(R // 4096, (sms * 8 * {per_block} + K - 1) // K, 4096))"]
    lines += _bn_launch(True) + ["    extra = [rm, rv, float(mom), upd]"] if _bn(st) else ["    extra = []"]
    lines += ["    ws = torch.empty((K * parts * 32 + 1,), device=dev, dtype=torch.uint8) if parts > 1 else out",
              "    units = K * parts",
              f"    blocks = (units + {per_block} - 1) // {per_block}",
              f"    common = [out, *T, *sargs, *eargs, ws, *extra, K, R, K2, {form_b}, parts, *_magic(K2)]",
              f"    _kernel({k}, 'k_red', g)(grid=(blocks, 1, 1), block=({nt}, 1, 1), args=common)",
              "    if parts > 1:",
              f"        _kernel({k}, 'k_fin', 32)(grid=((K + {nt // 32 - 1}) // {nt // 32}, 1, 1), block=({nt}, 1, 1), "
              "args=common)"]
    return lines


def cpp_opdef(stage: Stage) -> str:
    return f"#define OP {RED_OPS[stage.params['op']]}\n"


def cpp_body(ctx: StageCtx) -> str:
    st = ctx.stage
    out_t = "int64_t" if st.out_dtype == "long" else "float"
    n = len(ctx.em.tslots)
    bn_pre = fill("reduce.cpp.tmpl", "bn_pre", rm=n, rv=n + 1) if _bn(st) else ""
    return fill("reduce.cpp.tmpl", "body", bn_pre=bn_pre, out_t=out_t, fin=_fin(st, " " * 12, out_t, "s.c") + "\n",
                fin_tile=_fin(st, " " * 16, out_t, "s.c") + "\n")


def cpp_launch(ctx: StageCtx) -> list[str]:
    k, st = ctx.k, ctx.stage
    form_b = int(st.params.get("form") == "B")
    if _bn(st):
        return _bn_launch(False) + [
            "    rs = [bn.running_mean, bn.running_var] if upd else [out, out]",
            f"    _ext.stage{k}(out, T + rs, sargs + [float(mom)], eargs, [K, R, K2, {form_b}, upd, *_magic(K2)], _CFG)"]
    return [f"    _ext.stage{k}(out, T, sargs, eargs, [K, R, K2, {form_b}, *_magic(K2)], _CFG)"]
