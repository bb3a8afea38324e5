"""The map stage: one fused elementwise expression per output element (templates/map.cu.tmpl, map.cpp.tmpl)."""

from __future__ import annotations

from ..program import Stage
from ..templating import fill, raw
from .base import StageCtx

KIND = "map"
LAYOUT = False  # no K/R/K2: the output has the input expression's shape


def shape_lines(stage: Stage) -> list[str]:
    return ["    oshape = xshape"]


def py_params(stage: Stage) -> list[str]:
    return []


def cuda_source(ctx: StageCtx) -> str:
    return ctx.cuda_head() + fill("map.cu.tmpl", "kernel", params=", ".join(ctx.params + ["int n"]),
                                  scalars=ctx.scalars, lambdas=ctx.lambdas, unroll=ctx.knobs.get("unroll", 1))


def cuda_launch(ctx: StageCtx) -> list[str]:
    nt, k, knobs = ctx.knobs["block"], ctx.k, ctx.knobs
    unroll = knobs.get("unroll", 1)
    lines = ["    sms = _sms(dev)", f"    blocks = (n + {nt * unroll} - 1) // {nt * unroll}"]
    if knobs.get("grid") == "stride":
        lines += ["    blocks = min(blocks, sms * 8)"]
    lines += [f"    _kernel({k}, 'k_map', 1)(grid=(blocks, 1, 1), block=({nt}, 1, 1), "
              "args=[out, *T, *sargs, *eargs, n])"]
    return lines


def cpp_body(ctx: StageCtx) -> str:
    return raw("map.cpp.tmpl", "body")


def cpp_launch(ctx: StageCtx) -> list[str]:
    return [f"    _ext.stage{ctx.k}(out, T, sargs, eargs, [n], _CFG)"]
