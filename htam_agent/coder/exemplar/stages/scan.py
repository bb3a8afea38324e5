"""The scan stage: cumsum/cumprod along one dim, forward or reversed (templates/scan.cu.tmpl, scan.cpp.tmpl)."""

from __future__ import annotations

from ..program import Stage
from ..templating import fill
from .base import StageCtx, group_lines, layout_lines

KIND = "scan"
LAYOUT = True


def shape_lines(stage: Stage) -> list[str]:
    return layout_lines(stage) + ["    oshape = xshape"]


def py_params(stage: Stage) -> list[str]:
    return [stage.params["dim"]]


def _parts(stage: Stage) -> tuple[bool, bool]:
    return stage.params["op"] == "prod", bool(stage.params.get("reverse"))


def cuda_source(ctx: StageCtx) -> str:
    mul, rev = _parts(ctx.stage)
    sig = ", ".join(["float* __restrict__ out"] + ctx.params + ["int K", "int R", "int K2"])
    return ctx.cuda_stateful_head(4 if mul else 0) + fill(
        "scan.cu.tmpl", "kernel", sig=sig, scalars=ctx.scalars, lambdas=ctx.lambdas,
        comb="(a) * (b)" if mul else "(a) + (b)", ident="1.0" if mul else "0.0", rr="R - 1 - r" if rev else "r")


def cuda_launch(ctx: StageCtx) -> list[str]:
    nt, k = ctx.knobs["block"], ctx.k
    return group_lines(KIND, ctx.knobs) + [
        "    if K2 > 1 and g != 1:", "        g = 1",
        f"    blocks = (K + {nt - 1}) // {nt} if g == 1 else K",
        f"    _kernel({k}, 'k_scan', g)(grid=(blocks, 1, 1), block=({nt}, 1, 1), args=[out, *T, *sargs, *eargs, K, R, K2])"]


def cpp_body(ctx: StageCtx) -> str:
    mul, rev = _parts(ctx.stage)
    return fill("scan.cpp.tmpl", "body", ident="1.0" if mul else "0.0", rr="R - 1 - r" if rev else "r",
                comb_op="*" if mul else "+")


def cpp_launch(ctx: StageCtx) -> list[str]:
    return [f"    _ext.stage{ctx.k}(out, T, sargs, eargs, [K, R, K2], _CFG)"]
