"""The exemplar coder's one op table: every elementwise op it lowers, with all the ways a reference spells it.

A row names an op once and lists its spellings as aliases: `torch.*` / `F.*` / tensor-method names
(`functions`, matched by the callee's name, so `torch.relu`, `F.relu` and `x.relu()` are one alias) and
`nn.*` module classes (`modules`). Scalar parameters are described once (`Scalar`: where a call passes it, which
module attribute holds it), so the function and the module spelling of an op cannot drift apart. The row also
carries the op's arithmetic: a C form (CUDA and C++) and, where it exists, a Triton form. Both lowering paths
read this table: the staged lowering (`lower.py`, cuda and cpp) takes every row; the fixed elementwise and
row-wise families (`patterns.py`) take the rows with a Triton form, because those families are what the triton
backend is written from.

Adding an op is one row, registered through `register`::

    from htam_agent.coder.exemplar.optable import OpRow, register

    register(OpRow("tanhshrink", c="({x} - {tanh}({x}))", functions=("tanhshrink",), modules=("Tanhshrink",)))

after which `F.tanhshrink(x)`, `nn.Tanhshrink()(x)` and `x.tanhshrink()` lower on cuda and cpp (give it a
`triton=` form as well and the fixed families take it too). C forms are `str.format` templates over the
arguments (`{x}` is the first, `{a1}`, `{a2}` the next) and the dialect's functions (`{exp}`, `{tanh}`, `{erf}`,
`{max}`, `{min}`, `{abs}`, `{sqrt}`, `{log}`, `{log1p}`, `{expm1}`, `{pow}`, `{nan}`); a form that needs more (a
dialect-dependent division) is a function `(args, funcs) -> str`. Triton forms are the same over `{x}`, `{a1}`,
`{a2}`, or a function `(args, exp) -> str` where `exp(v)` is the dialect's exponential.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

CForm = str | Callable[[Sequence[str], "Funcs"], str]
TritonForm = str | Callable[[Sequence[str], Callable[[str], str]], str]


@dataclass(frozen=True)
class Scalar:
    """A scalar parameter: a call passes it at `pos` or as `keyword` (else `default`); the module spelling reads
    `self.<path>.<attr>` at run time, or uses `literal` when the module fixes it (ReLU6's 0 and 6)."""

    pos: int
    keyword: str
    default: float | None
    attr: str = ""
    literal: float | None = None


@dataclass(frozen=True)
class Variant:
    """An argument that picks another op: `F.gelu(x, approximate="tanh")` / `nn.GELU(approximate="tanh")`."""

    pos: int
    keyword: str
    attr: str
    ops: tuple[tuple[Any, str], ...]  # (argument value, op it selects); any other value keeps the row's op


@dataclass(frozen=True)
class OpRow:
    """One elementwise op: its forms and every spelling of it. `emit` names the row whose forms a spelling uses
    (hardtanh and relu6 are clamps with their own scalars); `arity` counts tensor operands (1 or 2)."""

    name: str
    c: CForm | None = None
    triton: TritonForm | None = None
    functions: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    scalars: tuple[Scalar, ...] = ()
    variant: Variant | None = None
    arity: int = 1
    emit: str = ""

    @property
    def op(self) -> str:
        """The op the lowering records (whose C/Triton forms render it)."""
        return self.emit or self.name


@dataclass(frozen=True)
class Funcs:
    """A C dialect's math functions (cuda, cuda_fast, cpp) and its division."""

    names: dict[str, str] = field(default_factory=dict)
    fast_div: bool = False

    def div(self, a: str, b: str) -> str:
        return f"__fdividef({a}, {b})" if self.fast_div else f"({a} / {b})"


_CUDA = {"exp": "expf", "tanh": "tanhf", "erf": "erff", "max": "fmaxf", "min": "fminf", "abs": "fabsf",
         "sqrt": "sqrtf", "log": "logf", "log1p": "log1pf", "expm1": "expm1f", "pow": "powf",
         "nan": "__int_as_float(0x7fc00000)"}
DIALECTS: dict[str, Funcs] = {
    "cuda": Funcs(_CUDA),
    "cuda_fast": Funcs({**_CUDA, "exp": "__expf", "log": "__logf"}, fast_div=True),
    "cpp": Funcs({"exp": "std::exp", "tanh": "std::tanh", "erf": "std::erf", "max": "std::max", "min": "std::min",
                  "abs": "std::fabs", "sqrt": "std::sqrt", "log": "std::log", "log1p": "std::log1p",
                  "expm1": "std::expm1", "pow": "std::pow", "nan": "NAN"}),
}


def _tl_tanh(v: str, exp: Callable[[str], str]) -> str:
    return (f"tl.where({v} < 0.0, -1.0, 1.0) * (1.0 - {exp(f'-2.0 * tl.abs({v})')}) / "
            f"(1.0 + {exp(f'-2.0 * tl.abs({v})')})")


def _tl_gelu_tanh(a: Sequence[str], exp: Callable[[str], str]) -> str:
    x = a[0]
    return f"(0.5 * {x} * (1.0 + {_tl_tanh(f'0.7978845608028654 * ({x} + 0.044715 * {x} * {x} * {x})', exp)}))"


_ROWS: list[OpRow] = [
    OpRow("relu", "({x} > 0.0f ? {x} : 0.0f)", "tl.maximum({x}, 0.0)", ("relu",), ("ReLU",)),
    OpRow("sigmoid", lambda a, f: f.div("1.0f", f"(1.0f + {f.names['exp']}(-{a[0]}))"),
          lambda a, exp: f"(1.0 / (1.0 + {exp(f'-{a[0]}')}))", ("sigmoid",), ("Sigmoid",)),
    OpRow("silu", lambda a, f: f.div(a[0], f"(1.0f + {f.names['exp']}(-{a[0]}))"),
          lambda a, exp: f"({a[0]} / (1.0 + {exp(f'-{a[0]}')}))", ("silu",), ("SiLU",)),
    OpRow("tanh", "{tanh}({x})", lambda a, exp: f"({_tl_tanh(a[0], exp)})", ("tanh",), ("Tanh",)),
    OpRow("gelu", "(0.5f * {x} * (1.0f + {erf}({x} * 0.70710678118654752f)))",
          "(0.5 * {x} * (1.0 + tl.math.erf({x} * 0.7071067811865476)))", ("gelu",), ("GELU",),
          variant=Variant(1, "approximate", "approximate", (("tanh", "gelu_tanh"),))),
    OpRow("gelu_tanh", "(0.5f * {x} * (1.0f + {tanh}(0.79788456080286536f * ({x} + 0.044715f * {x} * {x} * {x}))))",
          _tl_gelu_tanh),
    OpRow("hardswish", "({x} * {min}({max}({x} + 3.0f, 0.0f), 6.0f) / 6.0f)",
          "({x} * tl.minimum(tl.maximum({x} + 3.0, 0.0), 6.0) / 6.0)", ("hardswish",), ("Hardswish",)),
    OpRow("hardsigmoid", "({min}({max}({x} + 3.0f, 0.0f), 6.0f) / 6.0f)",
          "(tl.minimum(tl.maximum({x} + 3.0, 0.0), 6.0) / 6.0)", ("hardsigmoid",), ("Hardsigmoid",)),
    OpRow("neg", "(-{x})", "(-{x})", ("neg", "negative")),
    OpRow("abs", "{abs}({x})", "tl.abs({x})", ("abs",)),
    OpRow("exp", "{exp}({x})", lambda a, exp: exp(a[0]), ("exp",)),
    OpRow("sqrt", "{sqrt}({x})", "tl.sqrt({x})", ("sqrt",)),
    OpRow("rsqrt", "(1.0f / {sqrt}({x}))", "(1.0 / tl.sqrt({x}))", ("rsqrt",)),
    OpRow("square", "({x} * {x})", "({x} * {x})", ("square",)),
    OpRow("log", "{log}({x})", functions=("log",)),
    OpRow("log1p", "{log1p}({x})", functions=("log1p",)),
    OpRow("expm1", "{expm1}({x})", functions=("expm1",)),
    OpRow("erf", "{erf}({x})", functions=("erf",)),
    OpRow("reciprocal", "(1.0f / {x})", functions=("reciprocal",)),
    OpRow("softsign", "({x} / (1.0f + {abs}({x})))", functions=("softsign",), modules=("Softsign",)),
    OpRow("sign", "(float)(({x} > 0.0f) - ({x} < 0.0f))", functions=("sign",)),
    OpRow("selu", "(1.0507009873554804934f * ({x} > 0.0f ? {x} : 1.6732632423543772848f * {expm1}({x})))",
          functions=("selu",), modules=("SELU",)),
    OpRow("mish", "({x} * {tanh}({x} > 20.0f ? {x} : {log1p}({exp}({x}))))", functions=("mish",),
          modules=("Mish",)),
    OpRow("elu", "({x} > 0.0f ? {x} : {a1} * {expm1}({x}))", functions=("elu",), modules=("ELU",),
          scalars=(Scalar(1, "alpha", 1.0, "alpha"),)),
    OpRow("softplus", "({x} * {a1} > {a2} ? {x} : {log1p}({exp}({x} * {a1})) / {a1})", functions=("softplus",),
          modules=("Softplus",), scalars=(Scalar(1, "beta", 1.0, "beta"), Scalar(2, "threshold", 20.0, "threshold"))),
    OpRow("leaky_relu", "({x} > 0.0f ? {x} : {x} * {a1})", "tl.where({x} > 0.0, {x}, {x} * {a1})",
          ("leaky_relu",), ("LeakyReLU",), scalars=(Scalar(1, "negative_slope", 0.01, "negative_slope"),)),
    OpRow("clamp", "{min}({max}({x}, {a1}), {a2})", "tl.minimum(tl.maximum({x}, {a1}), {a2})",
          ("clamp", "clip")),
    OpRow("clamp_min", "{max}({x}, {a1})", "tl.maximum({x}, {a1})", ("clamp_min",)),
    OpRow("clamp_max", "{min}({x}, {a1})", "tl.minimum({x}, {a1})", ("clamp_max",)),
    OpRow("hardtanh", functions=("hardtanh",), modules=("Hardtanh",), emit="clamp",
          scalars=(Scalar(1, "min_val", -1.0, "min_val"), Scalar(2, "max_val", 1.0, "max_val"))),
    OpRow("relu6", functions=("relu6",), modules=("ReLU6",), emit="clamp",
          scalars=(Scalar(-1, "", 0.0, literal=0.0), Scalar(-1, "", 6.0, literal=6.0))),
    OpRow("huber", "({abs}({x}) < {a1} ? 0.5f * {x} * {x} / {a1} : {abs}({x}) - 0.5f * {a1})"),
    OpRow("kl_div", "({a1} > 0.0f ? {a1} * ({log}({a1}) - {x}) : ({a1} == 0.0f ? 0.0f : {nan}))", arity=2),
    OpRow("pow", "{pow}({x}, {a1})"),
    OpRow("rsub", "({a1} - {x})", functions=("rsub",), arity=2),
    OpRow("add", "({x} + {a1})", "({x} + {a1})", ("add",), arity=2),
    OpRow("sub", "({x} - {a1})", "({x} - {a1})", ("sub", "subtract"), arity=2),
    OpRow("mul", "({x} * {a1})", "({x} * {a1})", ("mul", "multiply"), arity=2),
    OpRow("div", lambda a, f: f.div(a[0], a[1]), "({x} / {a1})", ("div", "divide", "true_divide", "truediv"),
          arity=2),
    OpRow("maximum", "{max}({x}, {a1})", "tl.maximum({x}, {a1})", ("maximum", "fmax"), arity=2),
    OpRow("minimum", "{min}({x}, {a1})", "tl.minimum({x}, {a1})", ("minimum", "fmin"), arity=2),
]

ROWS: dict[str, OpRow] = {}
FUNCTIONS: dict[str, OpRow] = {}  # torch.* / F.* / tensor-method name -> row
MODULES: dict[str, OpRow] = {}  # nn module class name -> row
#: Python's operators (`x + y`, `-x`, `x ** 2` in a forward) by the function name they are spelled as
OPERATORS: dict[Callable[..., Any], str] = {operator.add: "add", operator.sub: "sub", operator.mul: "mul",
                                            operator.truediv: "div", operator.neg: "neg", operator.pow: "pow"}
#: the rows whose bounds are optional (`clamp(x, min=None, max=1)`): either may be absent, then the one-sided row
BOUNDED = ("clamp", "clamp_min", "clamp_max")


class TableError(ValueError):
    """A row that clashes with the table (a name or alias registered twice) or is incomplete."""


def register(row: OpRow, replace: bool = False) -> OpRow:
    """Add a row: its name, function aliases and module classes become known to both lowerings.

    Raises TableError when a name or alias is taken (pass replace=True to override a row on purpose) or when
    the row has no C form and does not `emit` another row's."""
    if row.c is None and not row.emit:
        raise TableError(f"op table row {row.name!r}: field c (the C form) is missing; give c= or emit=")
    if row.emit and row.emit not in ROWS:
        raise TableError(f"op table row {row.name!r}: field emit names {row.emit!r}, which is not a row")
    if not replace:
        clash = ([row.name] if row.name in ROWS else []) + [f for f in row.functions if f in FUNCTIONS] + \
            [m for m in row.modules if m in MODULES]
        if clash:
            raise TableError(f"op table row {row.name!r}: {clash} already registered (pass replace=True)")
    ROWS[row.name] = row
    FUNCTIONS.update(dict.fromkeys(row.functions, row))
    MODULES.update(dict.fromkeys(row.modules, row))
    return row


def unregister(name: str) -> None:
    """Remove a row and its aliases (tests that register a row take it out again)."""
    row = ROWS.pop(name)
    for table, keys in ((FUNCTIONS, row.functions), (MODULES, row.modules)):
        for k in keys:
            if table.get(k) is row:
                del table[k]


for _row in _ROWS:
    register(_row)


def c_form(op: str, args: Sequence[str], dialect: str) -> str:
    """The C expression of `op` over `args` in `dialect` (cuda, cuda_fast, cpp)."""
    row = ROWS.get(op)
    if row is None or row.c is None:
        raise ValueError(f"no C form for op {op!r}")
    funcs = DIALECTS[dialect]
    if callable(row.c):
        return row.c(args, funcs)
    return row.c.format(**_named(args), **funcs.names)


def triton_form(op: str, args: Sequence[str], exp: Callable[[str], str]) -> str:
    """The Triton expression of `op` over `args` (fp32 blocks); `exp` is the dialect's exponential."""
    row = ROWS.get(op)
    if row is None or row.triton is None:
        raise ValueError(f"no Triton form for op {op!r}")
    if callable(row.triton):
        return row.triton(args, exp)
    return row.triton.format(**_named(args))


def has_triton(op: str) -> bool:
    row = ROWS.get(op)
    return row is not None and row.triton is not None


def _named(args: Sequence[str]) -> dict[str, str]:
    return {"x": args[0] if args else "", **{f"a{i}": a for i, a in enumerate(args) if i}}
