"""Elementwise ops of a fused chain, rendered as C (CUDA and C++) and as Triton expressions.

The forms live in the op table (optable.py), three dialects per row, so a chain recognised once becomes the
same arithmetic on every backend. The formulas follow PyTorch's (erf GELU, x * sigmoid(x), hardswish as
x * clamp(x + 3, 0, 6) / 6).
"""

from __future__ import annotations

from .optable import c_form, triton_form
from .spec import Chain, Ref


def c_literal(x: float) -> str:
    return f"((float){float(x)!r})"


def _ref_c(ref: Ref) -> str:
    kind, val = ref
    if kind == "lit":
        return c_literal(val)
    return {"in": "a", "sc": "s", "v": "v"}[kind] + str(val)


def _ref_tl(ref: Ref) -> str:
    kind, val = ref
    if kind == "lit":
        return repr(float(val))
    return {"in": "a", "sc": "s", "v": "v"}[kind] + str(val)


def c_expr(op: str, args: list[str], dialect: str) -> str:
    """One op as a C float expression; `dialect` is cuda, cuda_fast or cpp (the form is the op table's)."""
    return c_form(op, args, dialect)


def tl_expr(op: str, args: list[str], fast: bool) -> str:
    """One op as a Triton expression on fp32 blocks (the form is the op table's)."""
    exp = (lambda v: f"tl.math.exp2(({v}) * 1.4426950408889634)") if fast else (lambda v: f"tl.exp({v})")
    return triton_form(op, args, exp)


def c_body(chain: Chain, dialect: str, indent: str = "    ") -> tuple[list[str], str]:
    """Statements computing the chain from a0.. and s0..; returns (lines, result variable)."""
    lines = []
    for k, step in enumerate(chain.steps):
        expr = c_expr(step.op, [_ref_c(a) for a in step.args], dialect)
        lines.append(f"{indent}const float v{k} = {expr};")
    result = f"v{len(chain.steps) - 1}" if chain.steps else "a0"
    return lines, result


def tl_body(chain: Chain, fast: bool, indent: str) -> tuple[list[str], str]:
    lines = []
    for k, step in enumerate(chain.steps):
        lines.append(f"{indent}v{k} = {tl_expr(step.op, [_ref_tl(a) for a in step.args], fast)}")
    result = f"v{len(chain.steps) - 1}" if chain.steps else "a0"
    return lines, result


def c_function(chain: Chain, dialect: str, name: str, qualifier: str) -> str:
    """`float name(float a0, ..., float s0, ...)` computing the chain for one element."""
    params = [f"float a{i}" for i in range(len(chain.operands))] + [f"float s{j}" for j in range(len(chain.scalars))]
    lines, result = c_body(chain, dialect)
    body = "\n".join(lines)
    return f"{qualifier} float {name}({', '.join(params)}) {{\n{body}\n    return {result};\n}}\n"
