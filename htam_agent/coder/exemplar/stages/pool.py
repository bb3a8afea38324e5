"""The pool stage: max/avg windows in 1-3 dims, one output per thread (templates/pool.cu.tmpl, pool.cpp.tmpl;
the window loop, shared by both, is pool_window.c.tmpl)."""

from __future__ import annotations

from ..program import Stage
from ..templating import fill
from .base import POOL_INTS, StageCtx, pool_window

KIND = "pool"
LAYOUT = False


def shape_lines(stage: Stage) -> list[str]:
    return [f"    oshape, geo = _pool_geom(xshape, {stage.params['nd']}, P[0], P[1], P[2], P[3], bool(P[4]))"]


def py_params(stage: Stage) -> list[str]:
    p = stage.params
    out = [p["kernel"], p["stride"], p["padding"], p["dilation"], p["ceil"]]
    if p["op"] == "avg":
        out += [p["include_pad"], p["divisor"]]
    return out


def cuda_source(ctx: StageCtx) -> str:
    sig = ", ".join(["float* __restrict__ out"] + ctx.params + [f"int {n}" for n in POOL_INTS]
                    + ["int include_pad", "int divisor", "int n"])
    return ctx.cuda_head() + fill("pool.cu.tmpl", "kernel", sig=sig, scalars=ctx.scalars, lambdas=ctx.lambdas,
                                  window=pool_window(ctx.stage.params["op"] == "max"))


def cuda_launch(ctx: StageCtx) -> list[str]:
    nt, k = ctx.knobs["block"], ctx.k
    return ["    sms = _sms(dev)", f"    blocks = min((n + {nt - 1}) // {nt}, sms * 16)",
            "    inc = int(bool(P[5])) if len(P) > 5 else 1",
            "    div = int(P[6]) if len(P) > 6 and P[6] else 0",
            f"    _kernel({k}, 'k_pool', 1)(grid=(blocks, 1, 1), block=({nt}, 1, 1), "
            "args=[out, *T, *sargs, *eargs, *geo, inc, div, n])"]


def cpp_body(ctx: StageCtx) -> str:
    names = ", ".join(f"{nm} = (int)I[{j}]" for j, nm in enumerate(POOL_INTS))
    return fill("pool.cpp.tmpl", "body", names=names, window=pool_window(ctx.stage.params["op"] == "max"))


def cpp_launch(ctx: StageCtx) -> list[str]:
    return ["    inc = int(bool(P[5])) if len(P) > 5 else 1",
            "    div = int(P[6]) if len(P) > 6 and P[6] else 0",
            f"    _ext.stage{ctx.k}(out, T, sargs, eargs, [*geo, inc, div, n], _CFG)"]
