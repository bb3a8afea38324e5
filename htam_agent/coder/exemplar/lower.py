"""Lower a traced reference into a staged `Program` (see program.py): the exemplar coder's general path.

Walks the FX graph in order, keeping elementwise work lazy (an expression over materialized tensors) and
opening a stage at each reduction, normalization, pooling or scan. A pending stage takes the elementwise
ops that follow it as its `post` expression when they keep its output shape; otherwise it is materialized
and the ops become the next stage's input expression. A leading Linear/convolution/transposed convolution
or matmul on forward arguments stays in PyTorch. Arguments that come from the module (`self.dim`,
`self.scale`, a pool's kernel size) are read back from the sentinel trace and emitted as Python expressions
evaluated in `forward`, so nothing the constructor chose is baked into a kernel.
"""

from __future__ import annotations

import operator
from typing import Any

from ..reference import Reference, call_arg, is_node, node_dtype, node_shape
from .optable import BOUNDED, FUNCTIONS, MODULES, OPERATORS, OpRow
from .program import E, Program, Stage, TensorRef, leaves, replace

_OPERATOR = {**OPERATORS, operator.getitem: "getitem"}
_REDUCE = ("sum", "mean", "amax", "amin", "argmax", "argmin", "prod", "logsumexp", "max", "min", "norm")
_IDENTITY = ("clone", "detach", "contiguous", "float")


class LowerError(Exception):
    """Why a reference is outside the staged lowering (turned into UnsupportedTask by the caller)."""


def _broadcast(*shapes: tuple[int, ...] | None) -> tuple[int, ...]:
    real = [s for s in shapes if s is not None]
    rank = max((len(s) for s in real), default=0)
    out = [1] * rank
    for s in real:
        pad = (1,) * (rank - len(s)) + tuple(s)
        for i, d in enumerate(pad):
            if d != 1:
                if out[i] not in (1, d):
                    raise LowerError(f"shapes {shapes} do not broadcast")
                out[i] = d
    return tuple(out)


def _norm_dims(dims: Any, rank: int) -> list[int]:
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    out = sorted({d % rank if rank else 0 for d in dims})
    return out


class Lowering:
    """One pass over the graph; `run` returns the Program or raises LowerError."""

    def __init__(self, traced: Reference, fwd_args: list[str]) -> None:
        self.traced = traced
        self.gm = traced.gm
        self.fwd_args = fwd_args
        self.tensors: list[TensorRef] = []
        self.stages: list[Stage] = []
        self.vals: dict[Any, Any] = {}
        self.prefix_lines: list[str] = []
        self.prefix_nobias: list[str] = []
        self.prefix_tensor = -1
        self.bias_leaf = -1
        self.has_bias = False

    # -- values -----------------------------------------------------------------------------------
    def tensor(self, expr: str, shape: tuple[int, ...], dtype: str = "float") -> E:
        for i, t in enumerate(self.tensors):
            if t.expr == expr:
                return E("leaf", t.shape, val=i)
        self.tensors.append(TensorRef(expr, tuple(shape), dtype))
        return E("leaf", tuple(shape), val=len(self.tensors) - 1)

    def op(self, name: str, args: list[E], shape: tuple[int, ...] | None = None) -> E:
        if all(a.kind in ("lit", "sc") for a in args):
            raise LowerError(f"{name} of scalars only")
        for a in args:
            if a.kind in ("leaf", "pend") and self._dtype(a) == "long":
                raise LowerError(f"{name} on an integer tensor")
        if shape is None:
            shape = _broadcast(*[a.shape for a in args if a.kind not in ("lit", "sc")])
        return E("op", tuple(shape), op=name, args=tuple(args))

    def _dtype(self, e: E) -> str:
        if e.kind == "leaf":
            return self.tensors[e.val].dtype
        if e.kind == "pend":
            return self.stages[e.val].out_dtype
        return "float"

    def stage(self, kind: str, inp: E, out_shape: tuple[int, ...], params: dict[str, Any],
              out_dtype: str = "float") -> E:
        inp = self.resolve(inp)
        if any(lf.kind == "leaf" and self.tensors[lf.val].dtype == "long" for lf in leaves(inp)):
            raise LowerError(f"{kind} of an integer tensor")
        self.stages.append(Stage(kind, inp, tuple(out_shape), dict(params), out_dtype))
        return E("pend", tuple(out_shape), val=len(self.stages) - 1)

    def finalize(self, sid: int, post: E | None) -> int:
        st = self.stages[sid]
        if st.out >= 0:
            if post is not None or st.post is not None:
                raise LowerError("a reduction's raw result is used both before and after its elementwise epilogue")
            return st.out
        st.post = post
        self.tensors.append(TensorRef(f"_t{len(self.tensors)}", st.out_shape, st.out_dtype))
        st.out = len(self.tensors) - 1
        return st.out

    def resolve(self, e: E) -> E:
        """`e` over materialized tensors only: a pending stage takes `e` as its epilogue when it can."""
        pends = {lf.val for lf in leaves(e) if lf.kind == "pend"}
        if not pends:
            return e
        if len(pends) == 1:
            sid = next(iter(pends))
            st = self.stages[sid]
            if st.out < 0 and tuple(e.shape or ()) == st.out_shape:
                if e.kind == "pend":
                    tid = self.finalize(sid, None)
                else:
                    if st.out_dtype != "float":
                        raise LowerError("elementwise ops on an arg-reduction's indices")
                    post = replace(e, lambda lf: E("self", lf.shape) if lf.kind == "pend" else lf)
                    tid = self.finalize(sid, post)
                return E("leaf", st.out_shape, val=tid)
        for sid in pends:
            self.finalize(sid, None)
        return replace(e, lambda lf: E("leaf", lf.shape, val=self.stages[lf.val].out) if lf.kind == "pend" else lf)

    # -- argument helpers -------------------------------------------------------------------------------
    def pyexpr(self, a: Any, b: Any) -> str:
        """A Python expression for a non-tensor argument: a literal, or `self.<attr>` when it follows a sentinel."""
        if isinstance(a, (list, tuple)):
            if not isinstance(b, (list, tuple)) or len(a) != len(b):
                raise LowerError("an argument whose length depends on constructor arguments")
            inner = [self.pyexpr(x, y) for x, y in zip(a, b, strict=True)]
            return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
        if a == b or isinstance(a, (bool, str)) or a is None:
            if a != b:
                raise LowerError("a non-numeric argument that depends on constructor arguments")
            return repr(a)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            expr = self.traced.sentinels.get(float(b))
            if expr is None:
                raise LowerError("an argument computed from constructor arguments")
            return f"int({expr})" if isinstance(a, int) else f"float({expr})"
        raise LowerError(f"argument {a!r} of unsupported kind")

    def scalar(self, a: Any, b: Any) -> E:
        if isinstance(a, bool) or not isinstance(a, (int, float)):
            raise LowerError(f"non-numeric scalar {a!r}")
        if a == b:
            return E("lit", val=float(a))
        expr = self.traced.sentinels.get(float(b))
        if expr is None:
            raise LowerError("a constant computed from constructor arguments")
        return E("sc", val=f"float({expr})")

    def value(self, a: Any, b: Any) -> Any:
        from torch.fx import Node

        if isinstance(a, Node):
            if a not in self.vals:
                raise LowerError(f"value {a.name} is not available")
            return self.vals[a]
        return self.scalar(a, b)

    # -- the walk ---------------------------------------------------------------------------------------
    def run(self, out_node: Any) -> Program:
        nodes = list(self.gm.graph.nodes)
        alts = list(self.traced.alt.graph.nodes)
        for n, alt in zip(nodes, alts, strict=True):
            if n.op == "placeholder":
                shape = node_shape(n)
                if shape is None or node_dtype(n) is None:
                    self.vals[n] = E("sc", val=f"float({n.target})")  # a number passed to forward
                    continue
                dt = _dtype_name(n)
                self.vals[n] = self.tensor(n.target, shape, dt)
            elif n.op == "get_attr" and (n.target.startswith("_tensor_constant")
                                         or not _has_attr(self.traced.model, n.target)):
                # a tensor FX folded out of forward (torch.tensor(self.value)): a scalar read back at run time
                a, b = _fetch(self.gm, n.target), _fetch(self.traced.alt, alt.target)
                if getattr(a, "numel", lambda: 0)() != 1 or getattr(b, "numel", lambda: 0)() != 1:
                    raise LowerError("a tensor constant built inside forward")
                self.vals[n] = self.scalar(float(a), float(b))
            elif n.op == "get_attr":
                shape = node_shape(n)
                if shape is None:
                    raise LowerError(f"attribute {n.target} is not a tensor")
                self.vals[n] = self.tensor(f"self.{n.target}", shape, _dtype_name(n))
            elif n.op in ("call_function", "call_method", "call_module"):
                self.vals[n] = self.node(n, alt)
            elif n.op == "output":
                break
        out = self.vals.get(out_node)
        if not isinstance(out, E):
            raise LowerError("the forward does not return one tensor")
        if out.kind in ("lit", "sc"):
            raise LowerError("the forward returns a constant")
        if out.kind == "leaf" and not any(s.out == out.val for s in self.stages):
            raise LowerError("nothing for a kernel to compute (the output is an input or the GEMM/convolution)")
        if not self.stages and out.kind != "op":
            raise LowerError("nothing for a kernel to compute")
        out = self.resolve(out)
        if out.kind != "leaf" or not any(s.out == out.val for s in self.stages):
            if out.shape is None:
                raise LowerError("the output has no known shape")
            pend = self.stage("map", out, tuple(out.shape), {})
            out = E("leaf", pend.shape, val=self.finalize(pend.val, None))
        if not self.stages:
            raise LowerError("nothing for a kernel to compute")
        return Program(self.tensors, self.stages, out.val, tuple(self.prefix_lines), self.has_bias,
                       tuple(self.prefix_nobias), self.bias_leaf, self.prefix_tensor)

    def node(self, n: Any, alt: Any) -> Any:
        if n.op == "call_module":
            return self.module(n, alt)
        if n.op == "call_method":
            name = n.target
        else:
            name = _OPERATOR.get(n.target) or getattr(n.target, "__name__", "")
            if n.target is getattr:
                name = "getattr"
        return self.function(name, n, alt)

    # -- functions and methods ----------------------------------------------------------------------------
    def function(self, name: str, n: Any, alt: Any) -> Any:  # noqa: C901 - one dispatch table
        a0 = self.vals.get(n.args[0]) if n.args and is_node(n.args[0]) else None
        shape = node_shape(n)
        if name == "getattr":
            attr = n.args[1]
            if isinstance(a0, tuple) and a0[0] == "tuple" and attr in ("values", "indices"):
                return self._pick(a0, 0 if attr == "values" else 1)
            if attr in ("device", "dtype"):
                return ("py", attr)
            if attr in ("T", "mT") and isinstance(a0, E) and a0.kind == "leaf":
                return ("T", a0)
            raise LowerError(f"attribute .{attr}")
        if name == "getitem":
            if isinstance(a0, tuple) and a0[0] == "tuple" and isinstance(n.args[1], int):
                return self._pick(a0, n.args[1])
            raise LowerError("indexing or slicing a tensor")
        if name in _IDENTITY:
            return self._tensor_arg(a0)
        if name == "tensor":
            if n.args and isinstance(n.args[0], (int, float)) and not isinstance(n.args[0], bool):
                return self.scalar(n.args[0], alt.args[0])
            raise LowerError("torch.tensor of non-scalar data")
        if name in ("linear", "matmul", "mm", "bmm"):
            return self.gemm_fn(name, n)
        x = a0 if isinstance(a0, E) and a0.kind not in ("lit", "sc") else E("lit", val=0.0)
        row = FUNCTIONS.get(name)
        if row is not None and row.arity == 2 or name == "pow" or name in ("max", "min") and _second_is_tensor(n, self.vals):
            return self.binary(name, n, alt, shape)
        if name not in ("cumsum", "cumprod", "flip"):
            x = self._tensor_arg(a0)
        if row is not None and row.name in BOUNDED:
            return self.clamp(name, n, alt, x, shape)
        if row is not None:
            return self.table_fn(row, name, n, alt, x, shape)
        if name in ("softmax", "log_softmax"):
            dim = self._pyarg(n, alt, 1, "dim", None)
            if dim == "None":
                raise LowerError(f"{name} without dim")
            return self.norm(name, x, dim, shape)
        if name in _REDUCE:
            return self.reduce(name, n, alt, x, shape)
        if name in ("cumsum", "cumprod"):
            if n.kwargs.get("dtype") is not None:
                raise LowerError(f"{name} with a dtype")
            dim = self._pyarg(n, alt, 1, "dim", None)
            reverse = False
            if not (isinstance(a0, tuple) and a0[0] == "flip"):
                x = self._tensor_arg(a0)
            if isinstance(a0, tuple) and a0[0] == "flip":
                if a0[2] != dim and a0[2] != f"({dim},)":
                    raise LowerError("cumsum over a flipped tensor along another dim")
                reverse = True
                x = a0[1]
            p = self.stage("scan", x, tuple(x.shape or ()), {"op": name[3:], "dim": dim, "reverse": reverse})
            return ("flip", p, dim) if reverse else p
        if name == "flip":
            dims = self._pyarg(n, alt, 1, "dims", None)
            if isinstance(a0, tuple) and a0[0] == "flip":
                if a0[2] != dims and f"({a0[2]},)" != dims:
                    raise LowerError("flip along other dims")
                return a0[1]
            return ("flip", self._tensor_arg(a0), dims)
        if name in ("unsqueeze", "squeeze"):
            d, d_alt = call_arg(n, 1, "dim", None), call_arg(alt, 1, "dim", None)
            if not isinstance(d, int) or d != d_alt:
                raise LowerError(f"{name} without a literal dim")
            if x.kind == "leaf":
                return self.tensor(f"{self.tensors[x.val].expr}.{name}({d})", shape, self.tensors[x.val].dtype)
            return E("view", shape, args=(x,), val=(name, d))
        if name in ("layer_norm", "group_norm", "instance_norm", "batch_norm"):
            raise LowerError(f"F.{name} (use the nn module)")
        if name in ("max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d"):
            return self.pool_fn(name, n, alt, x, shape)
        if name in ("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d"):
            nd = int(name[-2])
            out = call_arg(n, 1, "output_size", None)
            if not all(v == 1 for v in (out if isinstance(out, (list, tuple)) else [out] * nd)):
                raise LowerError("adaptive pooling to a size other than 1")
            dims = "(" + ", ".join(str(-d) for d in range(nd, 0, -1)) + ",)"
            return self.stage("reduce", x, shape, {"op": "mean", "dims": dims, "keepdim": True, "form": "A"})
        if name in ("mse_loss", "smooth_l1_loss", "l1_loss"):
            return self.loss(name, n, alt, shape)
        if name == "kl_div":
            return self.kl_div(n, alt, shape)
        if name == "dropout":
            p = call_arg(n, 1, "p", 0.5)
            if p == 0:
                return x
            raise LowerError("dropout with p > 0 (random)")
        raise LowerError(f"function {name}")

    def table_fn(self, row: OpRow, name: str, n: Any, alt: Any, x: E, shape: Any) -> E:
        """An op-table row spelled as a function or method: its scalars read from the call's arguments."""
        if not row.scalars and row.variant is None:
            if len(n.args) + len(n.kwargs) > 2 or n.kwargs.get("out"):
                raise LowerError(f"function {name}")
            if name in ("sigmoid", "tanh", "relu") and n.op == "call_function" and n.kwargs:
                raise LowerError(f"{name} with keyword arguments")
        op = row.op
        if row.variant is not None:
            v = row.variant
            op = dict(v.ops).get(call_arg(n, v.pos, v.keyword, None), op)
        args = [x] + [E("lit", val=sc.literal) if sc.literal is not None else self._sarg(n, alt, sc.pos, sc.keyword,
                                                                                          sc.default)
                      for sc in row.scalars]
        return self.op(op, args, shape)

    def table_module(self, row: OpRow, mod: Any, path: str, x: E, shape: Any) -> E:
        """An op-table row spelled as an nn module: its scalars read from the module's attributes at run time."""
        op = row.op
        if row.variant is not None:
            op = dict(row.variant.ops).get(getattr(mod, row.variant.attr, None), op)
        args = [x] + [E("lit", val=sc.literal) if sc.literal is not None else E("sc", val=f"float({path}.{sc.attr})")
                      for sc in row.scalars]
        return self.op(op, args, shape)

    def _pick(self, tup: Any, i: int) -> Any:
        """An element of a (values, indices) result; the indices become an arg-reduction stage when read."""
        v = tup[1][i]
        if isinstance(v, tuple) and v[0] == "argidx":
            _, x, op, dims_e, keep_e, vshape = v
            v = self.stage("reduce", x, vshape, {"op": op, "dims": dims_e, "keepdim": keep_e, "form": "A"}, "long")
            tup[1][i] = v
        return v

    def _tensor_arg(self, v: Any) -> E:
        if isinstance(v, E) and v.kind not in ("lit", "sc"):
            return v
        raise LowerError("an argument that is not a tensor the lowering knows")

    def _sarg(self, n: Any, alt: Any, idx: int, key: str, default: Any) -> E:
        a, b = call_arg(n, idx, key, default), call_arg(alt, idx, key, default)
        return self.scalar(a, b)

    def _pyarg(self, n: Any, alt: Any, idx: int, key: str, default: Any) -> str:
        return self.pyexpr(call_arg(n, idx, key, default), call_arg(alt, idx, key, default))

    def binary(self, name: str, n: Any, alt: Any, shape: Any) -> E:
        if name in ("add", "sub") and call_arg(n, 2, "alpha", 1) != 1:
            raise LowerError("add/sub with alpha")
        if name in ("div", "divide", "true_divide") and n.kwargs.get("rounding_mode") is not None:
            raise LowerError("division with a rounding mode")
        a = call_arg(n, 0, "input", None)
        b = call_arg(n, 1, "other", None)
        if b is None:
            b = n.kwargs.get("exponent")
        va = self.value(a, call_arg(alt, 0, "input", None))
        vb = self.value(b, call_arg(alt, 1, "other", n.kwargs.get("exponent")))
        for v in (va, vb):
            if not isinstance(v, E):
                raise LowerError(f"{name} of a value the lowering does not know")
        if name == "pow":
            if vb.kind != "lit":
                raise LowerError("pow with a non-literal exponent")
            if vb.val == 2:
                return self.op("square", [va], shape)
            if vb.val == 3:
                return self.op("mul", [self.op("square", [va], shape), va], shape)
            if vb.val == 0.5:
                return self.op("sqrt", [va], shape)
            return self.op("pow", [va, vb], shape)
        op = {"max": "maximum", "min": "minimum"}.get(name) or FUNCTIONS[name].op
        return self.op(op, [va, vb], shape)

    def clamp(self, name: str, n: Any, alt: Any, x: E, shape: Any) -> E:
        """clamp, clip, clamp_min, clamp_max: either bound may be absent (then the one-sided row)."""
        lo_a = call_arg(n, 1, "min", None) if name != "clamp_max" else None
        hi_a = (call_arg(n, 2, "max", None) if name in ("clamp", "clip") else call_arg(n, 1, "max", None)) \
            if name != "clamp_min" else None
        if is_node(lo_a) or is_node(hi_a):
            raise LowerError("clamp with tensor bounds")
        lo_b = call_arg(alt, 1, "min", None) if name != "clamp_max" else None
        lo = None if lo_a is None else self.scalar(lo_a, lo_b)
        if hi_a is None:
            hi = None
        else:
            hb = call_arg(alt, 2, "max", None) if name in ("clamp", "clip") else call_arg(alt, 1, "max", None)
            hi = self.scalar(hi_a, hb)
        if lo is None and hi is None:
            raise LowerError("clamp without bounds")
        if lo is None:
            return self.op("clamp_max", [x, hi], shape)  # type: ignore[list-item]
        if hi is None:
            return self.op("clamp_min", [x, lo], shape)
        return self.op("clamp", [x, lo, hi], shape)

    def reduce(self, name: str, n: Any, alt: Any, x: E, shape: Any) -> Any:
        if n.kwargs.get("dtype") is not None:
            raise LowerError(f"{name} with a dtype")
        rank = len(x.shape or ())
        if name == "norm":
            p = call_arg(n, 1, "p", "fro")
            dim_a, dim_b = call_arg(n, 2, "dim", None), call_arg(alt, 2, "dim", None)
            keep = self.pyexpr(call_arg(n, 3, "keepdim", False), call_arg(alt, 3, "keepdim", False))
            if p not in ("fro", 2, 2.0, 1, 1.0):
                raise LowerError(f"norm with p={p!r}")
            inner = self.op("square" if p not in (1, 1.0) else "abs", [x], x.shape)
            traced = _norm_dims(dim_a, rank)
            self._check_contiguous(traced)
            pend = self.stage("reduce", inner, shape, {"op": "sum", "dims": self.pyexpr(dim_a, dim_b),
                                                       "keepdim": keep, "form": "A"})
            return self.op("sqrt", [pend], shape) if p not in (1, 1.0) else pend
        dim_key = "dim"
        dim_a, dim_b = call_arg(n, 1, dim_key, None), call_arg(alt, 1, dim_key, None)
        keep_a, keep_b = call_arg(n, 2, "keepdim", False), call_arg(alt, 2, "keepdim", False)
        op = {"amax": "max", "amin": "min", "logsumexp": "lse"}.get(name, name)
        if name in ("max", "min"):
            if dim_a is None:  # full reduction: one value
                return self.stage("reduce", x, shape, {"op": op, "dims": "None", "keepdim": "False", "form": "A"})
            dims_e, keep_e = self.pyexpr(dim_a, dim_b), self.pyexpr(keep_a, keep_b)
            self._check_contiguous(_norm_dims(dim_a, rank))
            vshape = _reduced_shape(x.shape or (), _norm_dims(dim_a, rank), bool(keep_a))
            values = self.stage("reduce", x, vshape, {"op": op, "dims": dims_e, "keepdim": keep_e, "form": "A"})
            return ("tuple", [values, ("argidx", x, "arg" + op, dims_e, keep_e, vshape)])
        if dim_a is None and name in ("argmax", "argmin") and rank > 1:
            raise LowerError(f"{name} over the flattened tensor")
        self._check_contiguous(_norm_dims(dim_a, rank))
        params = {"op": op, "dims": self.pyexpr(dim_a, dim_b), "keepdim": self.pyexpr(keep_a, keep_b), "form": "A"}
        return self.stage("reduce", x, shape, params, "long" if name in ("argmax", "argmin") else "float")

    def _check_contiguous(self, dims: list[int]) -> None:
        if dims and dims != list(range(dims[0], dims[-1] + 1)):
            raise LowerError(f"a reduction over non-adjacent dims {dims}")

    def norm(self, name: str, x: E, dim: str, shape: Any) -> E:
        return self.stage("norm", x, shape, {"op": name, "dims": dim, "form": "A"})

    def pool_fn(self, name: str, n: Any, alt: Any, x: E, shape: Any) -> E:
        nd = int(name[-2])
        kind = "max" if name.startswith("max") else "avg"
        p: dict[str, Any] = {"op": kind, "nd": nd, "kernel": self._pyarg(n, alt, 1, "kernel_size", None),
                             "stride": self._pyarg(n, alt, 2, "stride", None),
                             "padding": self._pyarg(n, alt, 3, "padding", 0)}
        if kind == "max":
            if call_arg(n, 6, "return_indices", False):
                raise LowerError("max pooling with indices")
            p.update(dilation=self._pyarg(n, alt, 4, "dilation", 1), ceil=self._pyarg(n, alt, 5, "ceil_mode", False))
        else:
            p.update(dilation="1", ceil=self._pyarg(n, alt, 4, "ceil_mode", False),
                     include_pad=self._pyarg(n, alt, 5, "count_include_pad", True),
                     divisor=self._pyarg(n, alt, 6, "divisor_override", None))
        return self.stage("pool", x, shape, p)

    def loss(self, name: str, n: Any, alt: Any, shape: Any) -> E:
        a = self._tensor_arg(self.value(call_arg(n, 0, "input", None), None))
        b = self._tensor_arg(self.value(call_arg(n, 1, "target", None), None))
        red = call_arg(n, 2 if name != "smooth_l1_loss" else 4, "reduction", "mean")
        if a.shape != b.shape:
            raise LowerError(f"{name} with broadcasting")
        d = self.op("sub", [a, b], a.shape)
        if name == "mse_loss":
            e = self.op("square", [d], a.shape)
        elif name == "l1_loss":
            e = self.op("abs", [d], a.shape)
        else:
            e = self.op("huber", [d, self._sarg(n, alt, 5, "beta", 1.0)], a.shape)
        if red == "none":
            return e
        if red not in ("mean", "sum"):
            raise LowerError(f"{name} with reduction {red!r}")
        return self.stage("reduce", e, shape, {"op": red, "dims": "None", "keepdim": "False", "form": "A"})

    def kl_div(self, n: Any, alt: Any, shape: Any) -> E:
        inp = self._tensor_arg(self.value(call_arg(n, 0, "input", None), None))
        tgt = self._tensor_arg(self.value(call_arg(n, 1, "target", None), None))
        red = call_arg(n, 4, "reduction", "mean")
        if call_arg(n, 5, "log_target", False) or inp.shape != tgt.shape:
            raise LowerError("kl_div with log_target or broadcasting")
        e = self.op("kl_div", [inp, tgt], inp.shape)
        if red == "none":
            return e
        if red == "batchmean":
            full = next((lf for lf in leaves(e) if lf.kind == "leaf" and lf.shape == inp.shape), None)
            if full is None or not inp.shape:
                raise LowerError("kl_div batchmean without a full-size input")
            s = self.stage("reduce", e, shape, {"op": "sum", "dims": "None", "keepdim": "False", "form": "A"})
            return self.op("div", [s, E("sc", val=f"float({self.tensors[full.val].expr}.shape[0])")], shape)
        if red not in ("mean", "sum"):
            raise LowerError(f"kl_div with reduction {red!r}")
        return self.stage("reduce", e, shape, {"op": red, "dims": "None", "keepdim": "False", "form": "A"})

    def gemm_fn(self, name: str, n: Any) -> E:
        if self.prefix_tensor >= 0:
            raise LowerError("several GEMMs (a whole model); only one leading GEMM/convolution stays in PyTorch")
        parts = []
        for a in n.args[:3 if name == "linear" else 2]:
            v = self.vals.get(a) if is_node(a) else None
            if isinstance(v, tuple) and v[0] == "T":
                parts.append(f"{self.tensors[v[1].val].expr}.T")
            elif isinstance(v, E) and v.kind == "leaf" and not self._derived(v):
                parts.append(self.tensors[v.val].expr)
            elif a is None and name == "linear":
                parts.append("None")
            else:
                raise LowerError(f"{name} on computed operands")
        fn = {"linear": "F.linear", "matmul": "torch.matmul", "mm": "torch.mm", "bmm": "torch.bmm"}[name]
        return self._producer(f"{fn}({', '.join(parts)})", node_shape(n))

    def _derived(self, v: E) -> bool:
        return any(s.out == v.val for s in self.stages)

    def _producer(self, call: str, shape: Any, nobias: str = "", bias: str = "", bias_shape: Any = None) -> E:
        if shape is None:
            raise LowerError("the GEMM/convolution output has no known shape")
        # `_y`, not `y`: a forward argument may be called y (KernelBench level 2, 28)
        self.prefix_lines.append(f"        _y = {call}  # GEMM/convolution stays in PyTorch")
        self.prefix_nobias.append(f"        _y = {nobias or call}  # GEMM/convolution stays in PyTorch")
        y = self.tensor("_y", shape)
        self.prefix_tensor = y.val
        if bias:
            self.has_bias = True
            self.bias_leaf = self.tensor(bias, bias_shape).val
        return y

    # -- modules ---------------------------------------------------------------------------------------------
    def module(self, n: Any, alt: Any) -> Any:  # noqa: C901 - one dispatch table
        import torch.nn as nn

        mod = self.gm.get_submodule(n.target)
        path = f"self.{n.target}"
        shape = node_shape(n)
        t = type(mod)
        raw = self.vals.get(n.args[0]) if n.args and is_node(n.args[0]) else None
        if t in (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
                 nn.ConvTranspose3d):
            return self.producer_module(mod, path, raw, shape)
        if t is nn.TripletMarginLoss:
            return self.triplet(n, mod, path, shape)
        x = self._tensor_arg(raw)
        row = MODULES.get(t.__name__) if t.__module__.startswith("torch.nn") else None
        if row is not None:
            return self.table_module(row, mod, path, x, shape)
        if t is nn.Identity:
            return x
        if t is nn.Dropout:
            if mod.p == 0:
                return x
            raise LowerError("Dropout with p > 0 (random in training mode)")
        if t in (nn.Softmax, nn.LogSoftmax):
            if mod.dim is None:
                raise LowerError("Softmax without dim")
            return self.norm("softmax" if t is nn.Softmax else "log_softmax", x, f"{path}.dim", shape)
        if t is nn.LayerNorm:
            p = {"op": "standardize", "dims": f"tuple(range(-len({path}.normalized_shape), 0))", "form": "A",
                 "eps": f"float({path}.eps)"}
            return self.affine(self.stage("norm", x, shape, p), mod, path, shape, 0)
        if t is nn.GroupNorm:
            if len(shape) < 2:
                raise LowerError("GroupNorm on a 1-D tensor")
            p = {"op": "standardize", "groups": f"int({path}.num_groups)", "form": "G", "eps": f"float({path}.eps)"}
            return self.affine(self.stage("norm", x, shape, p), mod, path, shape, len(shape) - 2)
        if t in (nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d):
            if mod.track_running_stats:
                raise LowerError("InstanceNorm with running statistics")
            nd = {nn.InstanceNorm1d: 1, nn.InstanceNorm2d: 2, nn.InstanceNorm3d: 3}[t]
            if len(shape) != nd + 2:
                raise LowerError("InstanceNorm on an unbatched input")
            dims = "(" + ", ".join(str(-d) for d in range(nd, 0, -1)) + ",)"
            p = {"op": "standardize", "dims": dims, "form": "A", "eps": f"float({path}.eps)"}
            return self.affine(self.stage("norm", x, shape, p), mod, path, shape, nd, "affine")
        if t in (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d):
            return self.batchnorm(mod, path, x, shape)
        if t in (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d):
            nd = int(t.__name__[-2])
            kind = "max" if t.__name__.startswith("Max") else "avg"
            if kind == "max" and mod.return_indices:
                raise LowerError("max pooling with indices")
            if len(shape) != nd + 2:
                raise LowerError("pooling on an unbatched input")
            p: dict[str, Any] = {"op": kind, "nd": nd, "kernel": f"{path}.kernel_size", "stride": f"{path}.stride",
                                 "padding": f"{path}.padding", "ceil": f"{path}.ceil_mode"}
            if kind == "max":
                p["dilation"] = f"{path}.dilation"
            else:
                p.update(dilation="1", include_pad=f"{path}.count_include_pad",
                         divisor=f"getattr({path}, 'divisor_override', None)")
            return self.stage("pool", x, shape, p)
        if t in (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d):
            nd = int(t.__name__[-2])
            out = mod.output_size if isinstance(mod.output_size, (list, tuple)) else (mod.output_size,) * nd
            if not all(v == 1 for v in out):
                raise LowerError("adaptive pooling to a size other than 1")
            dims = "(" + ", ".join(str(-d) for d in range(nd, 0, -1)) + ",)"
            return self.stage("reduce", x, shape, {"op": "mean", "dims": dims, "keepdim": True, "form": "A"})
        raise LowerError(f"module {t.__name__}")

    def producer_module(self, mod: Any, path: str, raw: Any, shape: Any) -> E:
        import torch.nn as nn

        if self.prefix_tensor >= 0:
            raise LowerError("several Linear/convolution layers (a whole model)")
        if not (isinstance(raw, E) and raw.kind == "leaf" and not self._derived(raw)):
            raise LowerError("the Linear/convolution input is not a forward argument")
        x = self.tensors[raw.val].expr
        if isinstance(mod, nn.Linear):
            call = f"F.linear({x}, {path}.weight, {{}})"
            bshape = (mod.out_features,)
        else:
            if getattr(mod, "padding_mode", "zeros") != "zeros" or isinstance(mod.padding, str):
                raise LowerError("a convolution with string padding or a non-zero padding mode")
            nd = len(mod.kernel_size)
            if isinstance(mod, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
                call = (f"F.conv_transpose{nd}d({x}, {path}.weight, {{}}, {path}.stride, {path}.padding, "
                        f"{path}.output_padding, {path}.groups, {path}.dilation)")
            else:
                call = (f"F.conv{nd}d({x}, {path}.weight, {{}}, {path}.stride, {path}.padding, {path}.dilation, "
                        f"{path}.groups)")
            bshape = (mod.out_channels,) + (1,) * nd
        has_bias = mod.bias is not None
        ones = ", 1" * (len(bshape) - 1)
        bias_expr = f"{path}.bias.view(-1{ones})" if len(bshape) > 1 else f"{path}.bias"
        return self._producer(call.format(f"{path}.bias" if has_bias else "None"), shape,
                              call.format("None"), bias_expr if has_bias else "", bshape)

    def affine(self, pend: E, mod: Any, path: str, shape: Any, trailing: int, flag: str = "elementwise_affine") -> E:
        """Normalized value times weight plus bias, as elementwise ops the norm stage takes as its epilogue."""
        import torch.nn as nn

        if isinstance(mod, nn.LayerNorm):
            has_w = mod.weight is not None
            has_b = mod.bias is not None
            wexpr, bexpr = f"{path}.weight", f"{path}.bias"
            pshape = tuple(mod.normalized_shape)
        else:
            has_w = has_b = bool(getattr(mod, "affine", False)) and mod.weight is not None
            has_b = has_b and mod.bias is not None
            ones = ", 1" * trailing
            wexpr, bexpr = (f"{path}.weight.view(-1{ones})", f"{path}.bias.view(-1{ones})") if trailing else \
                (f"{path}.weight", f"{path}.bias")
            pshape = (shape[1],) + (1,) * trailing
        e = pend
        if has_w:
            e = self.op("mul", [e, self.tensor(wexpr, pshape)], shape)
        if has_b:
            e = self.op("add", [e, self.tensor(bexpr, pshape)], shape)
        return e

    def batchnorm(self, mod: Any, path: str, x: E, shape: Any) -> E:
        """Training mode: batch statistics (a mean/variance stage that also updates the running buffers),
        eval mode: the running buffers; then one elementwise pass (x - mean) * rsqrt(var + eps) * w + b."""
        if len(shape) < 2:
            raise LowerError("BatchNorm on a 1-D tensor")
        c = shape[1]
        trailing = len(shape) - 2
        stats = self.stage("reduce", x, (2, c), {"op": "meanvar", "dims": "(1,)", "form": "B", "bn": path})
        tid = self.finalize(stats.val, None)
        ones = ", 1" * trailing
        view = f".view(-1{ones})" if trailing else ""
        name = self.tensors[tid].expr
        pshape = (c,) + (1,) * trailing
        mean = self.tensor(f"{name}[0]{view}", pshape)
        var = self.tensor(f"{name}[1]{view}", pshape)
        eps = E("sc", val=f"float({path}.eps)")
        xr = self.resolve(x)
        e = self.op("mul", [self.op("sub", [xr, mean], shape),
                            self.op("rsqrt", [self.op("add", [var, eps], pshape)], pshape)], shape)
        if mod.affine:
            e = self.op("add", [self.op("mul", [e, self.tensor(f"{path}.weight{view}", pshape)], shape),
                                self.tensor(f"{path}.bias{view}", pshape)], shape)
        return e

    def triplet(self, n: Any, mod: Any, path: str, shape: Any) -> E:
        if mod.p != 2 or mod.swap or mod.reduction != "mean":
            raise LowerError("TripletMarginLoss other than p=2, no swap, mean")
        a, p, q = (self._tensor_arg(self.vals.get(v)) for v in n.args[:3])
        if not (a.shape == p.shape == q.shape) or len(a.shape or ()) != 2:
            raise LowerError("TripletMarginLoss on other than equal 2-D inputs")
        eps = E("sc", val=f"float({path}.eps)")
        rows = (a.shape[0],)  # type: ignore[index]

        def dist(b: E) -> E:
            sq = self.op("square", [self.op("add", [self.op("sub", [a, b], a.shape), eps], a.shape)], a.shape)
            s = self.stage("reduce", sq, rows, {"op": "sum", "dims": "(-1,)", "keepdim": "False", "form": "A"})
            return self.resolve(self.op("sqrt", [s], rows))

        d = self.op("clamp_min", [self.op("add", [self.op("sub", [dist(p), dist(q)], rows),
                                                  E("sc", val=f"float({path}.margin)")], rows), E("lit", val=0.0)], rows)
        return self.stage("reduce", d, shape, {"op": "mean", "dims": "None", "keepdim": "False", "form": "A"})


def _has_attr(model: Any, target: str) -> bool:
    obj = model
    for part in target.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def _fetch(gm: Any, target: str) -> Any:
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _reduced_shape(shape: tuple[int, ...], dims: list[int], keep: bool) -> tuple[int, ...]:
    return tuple(1 if i in dims else s for i, s in enumerate(shape) if keep or i not in dims)


def _second_is_tensor(n: Any, vals: dict[Any, Any]) -> bool:
    b = call_arg(n, 1, "other", None)
    return is_node(b) and isinstance(vals.get(b), E)


def _dtype_name(node: Any) -> str:
    """The node's dtype as the program names it (float, long, bool); any other is outside the exemplars."""
    import torch

    dt = node_dtype(node)
    if dt == torch.float32:
        return "float"
    if dt == torch.int64:
        return "long"
    if dt == torch.bool:
        return "bool"
    raise LowerError(f"{node.name} has dtype {dt}; the exemplars are fp32")
