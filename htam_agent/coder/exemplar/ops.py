"""Elementwise ops of a fused chain, rendered as C (CUDA and C++) and as Triton expressions.

One table, three dialects, so a chain recognised once becomes the same arithmetic on every backend. The
formulas follow PyTorch's (erf GELU, x * sigmoid(x), hardswish as x * clamp(x + 3, 0, 6) / 6).
"""

from __future__ import annotations

from .spec import Chain, Ref

# dialect -> (exp, tanh, erf, max, min, abs, sqrt)
_C_FUNCS = {
    "cuda": {"exp": "expf", "tanh": "tanhf", "erf": "erff", "max": "fmaxf", "min": "fminf", "abs": "fabsf",
             "sqrt": "sqrtf", "log": "logf", "log1p": "log1pf", "expm1": "expm1f", "pow": "powf"},
    "cuda_fast": {"exp": "__expf", "tanh": "tanhf", "erf": "erff", "max": "fmaxf", "min": "fminf",
                  "abs": "fabsf", "sqrt": "sqrtf", "log": "__logf", "log1p": "log1pf", "expm1": "expm1f",
                  "pow": "powf"},
    "cpp": {"exp": "std::exp", "tanh": "std::tanh", "erf": "std::erf", "max": "std::max", "min": "std::min",
            "abs": "std::fabs", "sqrt": "std::sqrt", "log": "std::log", "log1p": "std::log1p",
            "expm1": "std::expm1", "pow": "std::pow"},
}


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
    """One op as a C float expression; `dialect` is cuda, cuda_fast or cpp."""
    f = _C_FUNCS[dialect]
    x = args[0] if args else ""
    mx, mn = f["max"], f["min"]
    div = "__fdividef({}, {})" if dialect == "cuda_fast" else "({} / {})"
    table = {
        "relu": f"({x} > 0.0f ? {x} : 0.0f)",
        "sigmoid": div.format("1.0f", f"(1.0f + {f['exp']}(-{x}))"),
        "silu": div.format(x, f"(1.0f + {f['exp']}(-{x}))"),
        "tanh": f"{f['tanh']}({x})",
        "gelu": f"(0.5f * {x} * (1.0f + {f['erf']}({x} * 0.70710678118654752f)))",
        "gelu_tanh": f"(0.5f * {x} * (1.0f + {f['tanh']}(0.79788456080286536f * ({x} + 0.044715f * {x} * {x} * {x}))))",
        "hardswish": f"({x} * {mn}({mx}({x} + 3.0f, 0.0f), 6.0f) / 6.0f)",
        "hardsigmoid": f"({mn}({mx}({x} + 3.0f, 0.0f), 6.0f) / 6.0f)",
        "neg": f"(-{x})",
        "abs": f"{f['abs']}({x})",
        "exp": f"{f['exp']}({x})",
        "sqrt": f"{f['sqrt']}({x})",
        "rsqrt": f"(1.0f / {f['sqrt']}({x}))",
        "square": f"({x} * {x})",
        "log": f"{f['log']}({x})",
        "log1p": f"{f['log1p']}({x})",
        "expm1": f"{f['expm1']}({x})",
        "erf": f"{f['erf']}({x})",
        "reciprocal": f"(1.0f / {x})",
        "softsign": f"({x} / (1.0f + {f['abs']}({x})))",
        "sign": f"(float)(({x} > 0.0f) - ({x} < 0.0f))",
        "selu": f"(1.0507009873554804934f * ({x} > 0.0f ? {x} : 1.6732632423543772848f * {f['expm1']}({x})))",
        "mish": f"({x} * {f['tanh']}({x} > 20.0f ? {x} : {f['log1p']}({f['exp']}({x}))))",
    }
    if op in table:
        return table[op]
    if op == "elu":
        return f"({x} > 0.0f ? {x} : {args[1]} * {f['expm1']}({x}))"
    if op == "softplus":
        b, t = args[1], args[2]
        return f"({x} * {b} > {t} ? {x} : {f['log1p']}({f['exp']}({x} * {b})) / {b})"
    if op == "huber":
        b = args[1]
        return f"({f['abs']}({x}) < {b} ? 0.5f * {x} * {x} / {b} : {f['abs']}({x}) - 0.5f * {b})"
    if op == "kl_div":
        t = args[1]
        nan = "NAN" if dialect == "cpp" else "__int_as_float(0x7fc00000)"
        return f"({t} > 0.0f ? {t} * ({f['log']}({t}) - {x}) : ({t} == 0.0f ? 0.0f : {nan}))"
    if op == "pow":
        return f"{f['pow']}({x}, {args[1]})"
    if op == "rsub":
        return f"({args[1]} - {x})"
    if op == "leaky_relu":
        return f"({x} > 0.0f ? {x} : {x} * {args[1]})"
    if op == "clamp":
        return f"{mn}({mx}({x}, {args[1]}), {args[2]})"
    if op == "clamp_min":
        return f"{mx}({x}, {args[1]})"
    if op == "clamp_max":
        return f"{mn}({x}, {args[1]})"
    if op in ("add", "sub", "mul"):
        return f"({args[0]} {dict(add='+', sub='-', mul='*')[op]} {args[1]})"
    if op == "div":
        return div.format(args[0], args[1])
    if op == "maximum":
        return f"{mx}({args[0]}, {args[1]})"
    if op == "minimum":
        return f"{mn}({args[0]}, {args[1]})"
    raise ValueError(f"no C form for op {op!r}")


def tl_expr(op: str, args: list[str], fast: bool) -> str:
    """One op as a Triton expression on fp32 blocks."""
    x = args[0] if args else ""
    exp = (lambda v: f"tl.math.exp2(({v}) * 1.4426950408889634)") if fast else (lambda v: f"tl.exp({v})")
    tanh = (f"tl.where({x} < 0.0, -1.0, 1.0) * (1.0 - {exp(f'-2.0 * tl.abs({x})')}) / "
            f"(1.0 + {exp(f'-2.0 * tl.abs({x})')})")
    table = {
        "relu": f"tl.maximum({x}, 0.0)",
        "sigmoid": f"(1.0 / (1.0 + {exp(f'-{x}')}))",
        "silu": f"({x} / (1.0 + {exp(f'-{x}')}))",
        "tanh": f"({tanh})",
        "gelu": f"(0.5 * {x} * (1.0 + tl.math.erf({x} * 0.7071067811865476)))",
        "hardswish": f"({x} * tl.minimum(tl.maximum({x} + 3.0, 0.0), 6.0) / 6.0)",
        "hardsigmoid": f"(tl.minimum(tl.maximum({x} + 3.0, 0.0), 6.0) / 6.0)",
        "neg": f"(-{x})",
        "abs": f"tl.abs({x})",
        "exp": exp(x),
        "sqrt": f"tl.sqrt({x})",
        "rsqrt": f"(1.0 / tl.sqrt({x}))",
        "square": f"({x} * {x})",
    }
    if op in table:
        return table[op]
    if op == "gelu_tanh":
        inner = f"0.7978845608028654 * ({x} + 0.044715 * {x} * {x} * {x})"
        t = (f"tl.where(({inner}) < 0.0, -1.0, 1.0) * (1.0 - {exp(f'-2.0 * tl.abs({inner})')}) / "
             f"(1.0 + {exp(f'-2.0 * tl.abs({inner})')})")
        return f"(0.5 * {x} * (1.0 + {t}))"
    if op == "leaky_relu":
        return f"tl.where({x} > 0.0, {x}, {x} * {args[1]})"
    if op == "clamp":
        return f"tl.minimum(tl.maximum({x}, {args[1]}), {args[2]})"
    if op == "clamp_min":
        return f"tl.maximum({x}, {args[1]})"
    if op == "clamp_max":
        return f"tl.minimum({x}, {args[1]})"
    if op in ("add", "sub", "mul", "div"):
        return f"({args[0]} {dict(add='+', sub='-', mul='*', div='/')[op]} {args[1]})"
    if op == "maximum":
        return f"tl.maximum({args[0]}, {args[1]})"
    if op == "minimum":
        return f"tl.minimum({args[0]}, {args[1]})"
    raise ValueError(f"no Triton form for op {op!r}")


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
