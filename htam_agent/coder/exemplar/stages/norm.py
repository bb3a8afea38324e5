"""The norm stage: softmax, log-softmax (online max/sum) and standardization (one-pass shifted or two-pass
statistics), one row group per thread, warp or block; few long rows are split over blocks on CUDA
(templates/norm.cu.tmpl, norm.cpp.tmpl)."""

from __future__ import annotations

from ..program import Stage
from ..templating import fill, raw
from .base import StageCtx, group_lines, layout_lines

KIND = "norm"
LAYOUT = True


def shape_lines(stage: Stage) -> list[str]:
    return layout_lines(stage) + ["    oshape = xshape"]


def py_params(stage: Stage) -> list[str]:
    p = stage.params
    first = p["groups"] if p.get("form") == "G" else p["dims"]
    return [first, p.get("eps", "0.0")]


def _online(stage: Stage) -> bool:
    return stage.params["op"] in ("softmax", "log_softmax")


def _which(stage: Stage) -> str:
    """The template suffix of the value a row element becomes: softmax, log_softmax or standardize."""
    return stage.params["op"] if _online(stage) else "standardize"


def cuda_source(ctx: StageCtx) -> str:
    st, f = ctx.stage, "norm.cu.tmpl"
    op = 7 if _online(st) else 8
    which = _which(st)
    if op == 7:
        stats = raw(f, "stats_online") + raw(f, f"finish_{which}")
    elif ctx.knobs.get("passes") == "two_pass":
        stats = raw(f, "stats_two_pass")
    else:
        stats = raw(f, "stats_one_pass")
    val = raw(f, f"val_{which}")
    sig = ", ".join(["float* __restrict__ out"] + ctx.params + ["double eps", "int K", "int R", "int K2", "int formB",
                                                                "int K2m", "int K2s"])
    ssig = ", ".join(["float* __restrict__ out"] + ctx.params + [
        "double eps", "St* __restrict__ ws", "float* __restrict__ stats", "int K", "int R", "int K2", "int formB",
        "int K2m", "int K2s", "int P", "int Rm", "int Rs"])
    return (ctx.cuda_stateful_head(op)
            + fill(f, "kernel", sig=sig, scalars=ctx.scalars, lambdas=ctx.lambdas, stats=stats, val=val)
            + fill(f, "split", ssig=ssig, scalars=ctx.scalars, lambdas=ctx.lambdas, fin2=raw(f, f"split_fin_{which}"),
                   app=raw(f, f"apply_{which}"), val=val))


def cuda_launch(ctx: StageCtx) -> list[str]:
    nt, k, st = ctx.knobs["block"], ctx.k, ctx.stage
    per_block = f"({nt} // g)"
    form_b = int(st.params.get("form") == "B")
    lines = group_lines(KIND, ctx.knobs) + ["    eps = float(P[1]) if len(P) > 1 else 0.0"]
    if ctx.knobs.get("split", True):
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


def cpp_body(ctx: StageCtx) -> str:
    st, f = ctx.stage, "norm.cpp.tmpl"
    which = _which(st)
    if _online(st):
        stats = raw(f, "stats_online") + raw(f, f"finish_{which}")
    elif ctx.knobs.get("passes") == "two_pass":
        stats = raw(f, "stats_two_pass")
    else:
        stats = raw(f, "stats_one_pass")
    return fill(f, "body", stats=stats, val=raw(f, f"val_{which}"))


def cpp_launch(ctx: StageCtx) -> list[str]:
    form_b = int(ctx.stage.params.get("form") == "B")
    return ["    eps = float(P[1]) if len(P) > 1 else 0.0",
            f"    _ext.stage{ctx.k}(out, T, sargs + [eps], eargs, [K, R, K2, {form_b}, *_magic(K2)], _CFG)"]
