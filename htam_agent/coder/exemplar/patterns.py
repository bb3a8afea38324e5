"""Recognise a task's operator pattern from the FX graph of its reference `Model`.

The reference is read once by `coder.reference` (built and traced on the meta device, with the sentinel trace
that tells constructor scalars from literals: a constant that follows a sentinel is emitted as `self.<attr>`
read at run time, never baked into the kernel); the same reading goes to the staged lowering (`lower.py`) when
no fixed family matches. The pattern's operator class is `coder.opclass`'s, the analyze node's. Anything outside
the covered families raises `UnsupportedTask` with what was found and how to configure an LLM instead.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Any

from htam_agent import threadsafe

from ..base import UnsupportedTask
from ..opclass import classify
from ..reference import Reference, ReferenceReadError, call_arg, node_dtype, node_shape, read_reference
from .optable import BOUNDED, FUNCTIONS, MODULES, OPERATORS, OpRow, has_triton
from .spec import Chain, Operand, Pattern, Prefix, Ref, Step

LLM_HINT = (
    "The offline exemplar coder covers elementwise chains, reductions and arg-reductions over any adjacent dims, "
    "softmax/log-softmax, layer/group/instance/batch norms, pooling, cumsum/cumprod and losses, alone or after "
    "one Linear/convolution/transposed convolution kept in PyTorch, and fp32 matmul/bmm. For other tasks "
    "configure an LLM: set HTAM_MODEL, HTAM_BASE_URL and OPENAI_API_KEY, or pass --model/--base-url."
)

ROW_OPS = ("sum", "mean", "amax", "argmax", "softmax", "log_softmax", "layernorm", "rmsnorm")


def unsupported(task: str, why: str) -> UnsupportedTask:
    return UnsupportedTask(f"exemplar coder: task {task!r} is not supported: {why}. {LLM_HINT}")


def _function_table() -> dict[Any, str]:
    """torch.* / F.* callables -> the name `_canon` dispatches on: the op table's rows with a Triton form, and
    the row-wise, matmul and producer functions the fixed patterns match."""
    import torch
    import torch.nn.functional as F

    table: dict[Any, str] = dict(OPERATORS)
    names = [a for a, row in FUNCTIONS.items() if has_triton(row.op)]
    names += ["softmax", "log_softmax", "sum", "mean", "amax", "argmax", "matmul", "mm", "bmm", "pow",
              "layer_norm", "linear"]
    for name in names:
        for ns in (torch, F):
            fn = getattr(ns, name, None)
            if fn is not None:
                table.setdefault(fn, name)
    return table


class _Canon:
    """One FX node in canonical form: op name, tensor inputs (FX nodes) and named scalar parameters."""

    def __init__(self, op: str, tensors: list[Any], params: dict[str, Any], node: Any, alt: Any) -> None:
        self.op, self.tensors, self.params, self.node, self.alt = op, tensors, params, node, alt


def _table_canon(row: OpRow, tensors: list[Any], node: Any, alt: Any, module: str = "", mod: Any = None) -> _Canon:
    """An op-table row as a canonical node: its scalars as specs `_ChainBuilder.param` resolves (a call's
    argument, a module attribute read at run time, or a literal); a clamp's two scalars are its bounds."""
    op = row.op
    if row.variant is not None:
        v = row.variant
        choice = getattr(mod, v.attr, None) if module else call_arg(node, v.pos, v.keyword, None)
        op = dict(v.ops).get(choice, op)
    specs: list[tuple[Any, ...]] = []
    for sc in row.scalars:
        if sc.literal is not None:
            specs.append(("lit", sc.literal))
        elif module:
            specs.append(("expr", f"{module}.{sc.attr}"))
        else:
            specs.append(("val", sc.pos, sc.keyword, sc.default))
    keys = ("lo", "hi") if op == "clamp" else tuple(f"s{i}" for i in range(len(specs)))
    return _Canon(op, tensors, dict(zip(keys, specs, strict=True)), node, alt)


def _canon(task: str, node: Any, alt: Any, traced: Reference, table: dict[Any, str]) -> _Canon:
    """Map call_function / call_method / call_module nodes onto one vocabulary of ops."""
    import torch.nn as nn
    from torch.fx import Node

    if node.op == "call_module":
        mod = traced.gm.get_submodule(node.target)
        path = f"self.{node.target}"
        x = node.args[0] if node.args else None
        if type(mod) is nn.Identity:
            return _Canon("identity", [x], {}, node, alt)
        row = MODULES.get(type(mod).__name__) if type(mod).__module__.startswith("torch.nn") else None
        if row is not None and has_triton(row.op):
            return _table_canon(row, [x], node, alt, module=path, mod=mod)
        if type(mod) is nn.LayerNorm:
            if len(mod.normalized_shape) != 1:
                raise unsupported(task, "LayerNorm over more than the last dimension")
            return _Canon("layer_norm", [x], {
                "weight": f"{path}.weight" if mod.weight is not None else "",
                "bias": f"{path}.bias" if mod.bias is not None else "",
                "eps": ("expr", f"{path}.eps"), "dim": mod.normalized_shape[0]}, node, alt)
        if type(mod) in (nn.Softmax, nn.LogSoftmax):
            return _Canon("softmax" if type(mod) is nn.Softmax else "log_softmax", [x], {"dim": mod.dim}, node, alt)
        if type(mod) is nn.Linear:
            return _Canon("linear", [x], {"module": node.target, "bias": mod.bias is not None}, node, alt)
        if type(mod) in (nn.Conv1d, nn.Conv2d, nn.Conv3d):
            if mod.padding_mode != "zeros" or isinstance(mod.padding, str):
                raise unsupported(task, "a convolution with string padding or a non-zero padding mode")
            nd = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3}[type(mod)]
            return _Canon("conv", [x], {"module": node.target, "bias": mod.bias is not None, "nd": nd}, node, alt)
        raise unsupported(task, f"module {type(mod).__name__} ({node.target}) is outside the exemplar patterns")
    if node.op == "call_method":
        name = {"div_": "div", "true_divide": "div"}.get(node.target, node.target)
    elif node.op == "call_function":
        name = table.get(node.target, "")
        if not name:
            raise unsupported(task, f"function {getattr(node.target, '__name__', node.target)} is outside the "
                                    "exemplar patterns")
    else:
        raise unsupported(task, f"FX node kind {node.op}")
    a0 = node.args[0] if node.args else None
    row = FUNCTIONS.get(name)
    if row is not None and has_triton(row.op) and row.arity == 1:
        if row.name in BOUNDED:
            lo = ("val", 1, "min", None) if row.name != "clamp_max" else ("lit", None)
            hi = ("val", 2 if row.name == "clamp" else 1, "max", None) if row.name != "clamp_min" else ("lit", None)
            return _Canon("clamp", [a0], {"lo": lo, "hi": hi}, node, alt)
        return _table_canon(row, [a0], node, alt)
    if row is not None and has_triton(row.op) or name == "pow":
        name = row.op if row is not None else name
        if name in ("add", "sub") and call_arg(node, 2, "alpha", 1) != 1:
            raise unsupported(task, "add/sub with alpha")
        if name == "div" and node.kwargs.get("rounding_mode") is not None:
            raise unsupported(task, "division with a rounding mode")
        b = call_arg(node, 1, "other", None)
        if b is None:
            b = node.kwargs.get("exponent")
        return _Canon(name, [a0, b], {}, node, alt)
    if name in ("softmax", "log_softmax"):
        return _Canon(name, [a0], {"dim": call_arg(node, 1, "dim", None)}, node, alt)
    if name in ("sum", "mean", "amax", "argmax"):
        if node.kwargs.get("dtype") is not None:
            raise unsupported(task, f"{name} with a dtype")
        return _Canon(name, [a0], {"dim": call_arg(node, 1, "dim", None),
                                    "keepdim": call_arg(node, 2, "keepdim", False)}, node, alt)
    if name == "layer_norm":
        shape = call_arg(node, 1, "normalized_shape", None)
        w, b = call_arg(node, 2, "weight", None), call_arg(node, 3, "bias", None)
        if not isinstance(shape, (list, tuple)) or len(shape) != 1:
            raise unsupported(task, "layer_norm over more than the last dimension")
        refs = []
        for t in (w, b):
            if t is None:
                refs.append("")
            elif isinstance(t, Node) and t.op == "get_attr":
                refs.append(f"self.{t.target}")
            else:
                raise unsupported(task, "layer_norm with computed weight or bias")
        return _Canon("layer_norm", [a0], {"weight": refs[0], "bias": refs[1],
                                           "eps": ("val", 4, "eps", 1e-5), "dim": shape[0]}, node, alt)
    if name == "linear":
        w, b = call_arg(node, 1, "weight"), call_arg(node, 2, "bias")
        if not (isinstance(w, Node) and w.op == "get_attr") or not (b is None or (isinstance(b, Node)
                                                                                  and b.op == "get_attr")):
            raise unsupported(task, "F.linear with computed weights")
        raise unsupported(task, "F.linear on parameters (use an nn.Linear module)")
    if name in ("matmul", "mm", "bmm"):
        return _Canon("matmul", [a0, call_arg(node, 1, "other", None) if name == "matmul" else node.args[1]], {
            "fn": name}, node, alt)
    raise unsupported(task, f"op {name} is outside the exemplar patterns")


class _ChainBuilder:
    """Turns canonical elementwise nodes into a `Chain` with operands, runtime scalars and steps."""

    def __init__(self, task: str, traced: Reference) -> None:
        self.task, self.traced = task, traced
        self.operands: list[tuple[Any, str]] = []  # (FX node or None, expression)
        self.scalars: list[str] = []
        self.steps: list[Step] = []
        self.env: dict[Any, Ref] = {}

    def operand(self, node: Any, expr: str) -> Ref:
        ref: Ref = ("in", len(self.operands))
        self.operands.append((node, expr))
        self.env[node] = ref
        return ref

    def scalar(self, a: Any, b: Any) -> Ref:
        """A scalar argument: literal when both traces agree, `self.<attr>` when it follows a sentinel."""
        if isinstance(a, bool) or not isinstance(a, (int, float)):
            raise unsupported(self.task, f"non-numeric scalar argument {a!r}")
        if a == b:
            return ("lit", float(a))
        expr = self.traced.sentinels.get(float(b))
        if expr is None:
            raise unsupported(self.task, "a constant computed from constructor arguments")
        return self.expr_scalar(f"float({expr})")

    def expr_scalar(self, expr: str) -> Ref:
        if expr not in self.scalars:
            self.scalars.append(expr)
        return ("sc", self.scalars.index(expr))

    def value(self, arg: Any, alt_arg: Any) -> Ref:
        from torch.fx import Node

        if isinstance(arg, Node):
            if arg in self.env:
                return self.env[arg]
            if arg.op == "placeholder":
                return self.operand(arg, arg.target)
            if arg.op == "get_attr":
                return self.operand(arg, f"self.{arg.target}")
            raise unsupported(self.task, f"value {arg.name} is computed outside the fused chain")
        return self.scalar(arg, alt_arg)

    def param(self, c: _Canon, key: str) -> Ref | None:
        spec = c.params[key]
        if spec[0] == "lit":
            return None if spec[1] is None else ("lit", float(spec[1]))
        if spec[0] == "expr":
            return self.expr_scalar(f"float({spec[1]})")
        _, idx, name, default = spec
        a, b = call_arg(c.node, idx, name, default), call_arg(c.alt, idx, name, default)
        return None if a is None else self.scalar(a, b)

    def add(self, c: _Canon) -> None:
        alt_tensors = c.alt.args
        if c.op == "identity":
            self.env[c.node] = self.value(c.tensors[0], alt_tensors[0])
            return
        if c.op in ("add", "sub", "mul", "div", "maximum", "minimum"):
            args = tuple(self.value(t, alt_tensors[i] if i < len(alt_tensors) else t)
                         for i, t in enumerate(c.tensors))
            self.env[c.node] = self._step(c.op, args)
            return
        if c.op == "pow":
            if c.tensors[1] != 2:
                raise unsupported(self.task, f"pow with exponent {c.tensors[1]!r}")
            self.env[c.node] = self._step("square", (self.value(c.tensors[0], None),))
            return
        if not has_triton(c.op):
            raise unsupported(self.task, f"{c.op} inside an elementwise chain")
        x = self.value(c.tensors[0], None)
        if c.op == "clamp":
            lo, hi = self.param(c, "lo"), self.param(c, "hi")
            if lo is None and hi is None:
                raise unsupported(self.task, "clamp without bounds")
            op = "clamp" if lo is not None and hi is not None else ("clamp_min" if lo is not None else "clamp_max")
            self.env[c.node] = self._step(op, tuple(r for r in (x, lo, hi) if r is not None))
        else:  # a table row: its scalars in the row's order
            scalars = tuple(self.param(c, f"s{i}") for i in range(len(c.params)))
            self.env[c.node] = self._step(c.op, (x,) + tuple(r for r in scalars if r is not None))

    def _step(self, op: str, args: tuple[Ref, ...]) -> Ref:
        if op in ("add", "sub", "mul", "div", "maximum", "minimum") and all(a[0] in ("lit", "sc") for a in args):
            raise unsupported(self.task, f"{op} of two scalars")
        self.steps.append(Step(op, args))
        return ("v", len(self.steps) - 1)

    def chain(self, out_shape: tuple[int, ...]) -> Chain:
        ops = []
        for node, expr in self.operands:
            shape = node_shape(node) if node is not None else out_shape
            ops.append(_operand_kind(self.task, expr, shape, out_shape))
        return Chain(tuple(ops), tuple(self.scalars), tuple(self.steps))


def _operand_kind(task: str, expr: str, shape: tuple[int, ...] | None, out: tuple[int, ...]) -> Operand:
    """`full` when the operand has the output's shape, `axis` when it varies along one output axis only."""
    if shape is None:
        raise unsupported(task, f"{expr} is not a tensor of known shape")
    if tuple(shape) == tuple(out):
        return Operand(expr, "full")
    if len(shape) > len(out):
        raise unsupported(task, f"{expr} has more dimensions than the output")
    padded = (1,) * (len(out) - len(shape)) + tuple(shape)
    varying = [i for i, (p, o) in enumerate(zip(padded, out, strict=True)) if p != 1]
    if any(padded[i] != out[i] for i in varying):
        raise unsupported(task, f"{expr} of shape {tuple(shape)} does not broadcast to {tuple(out)}")
    if len(varying) > 1:
        raise unsupported(task, f"{expr} of shape {tuple(shape)} broadcasts along several axes")
    axis = (varying[0] - len(out)) if varying else -1
    return Operand(expr, "axis", axis)


def _is_last_dim(dim: Any, rank: int) -> bool:
    if isinstance(dim, (list, tuple)):
        if len(dim) != 1:
            return False
        dim = dim[0]
    return isinstance(dim, int) and not isinstance(dim, bool) and dim in (-1, rank - 1)


def _init_and_imports(task: str, source: str) -> tuple[str, str]:
    """The reference's `__init__` (copied so parameters, buffers and state_dict keys match) and its imports."""
    tree = threadsafe.parse(source)
    imports = ["import torch", "import torch.nn as nn", "import torch.nn.functional as F"]
    top_names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            seg = ast.get_source_segment(source, node) or ""
            if seg not in imports:
                imports.append(seg)
        elif isinstance(node, ast.Assign):
            top_names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name != "Model":
            top_names.add(node.name)
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    init = None if model is None else next(
        (n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None:
        return "    def __init__(self):\n        super().__init__()\n", "\n".join(imports)
    used = {n.id for n in ast.walk(init) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    own = {a.arg for a in ast.walk(init.args) if isinstance(a, ast.arg)}
    own |= {n.id for n in ast.walk(init) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    used -= own
    if used & top_names:
        raise unsupported(task, f"Model.__init__ reads module-level names {sorted(used & top_names)}")
    seg = ast.get_source_segment(source, init) or ""
    body = textwrap.indent(textwrap.dedent(" " * init.col_offset + seg), "    ")
    # KernelBench's own style, `super(Model, self).__init__()`, is the one reference to Model allowed
    supers = {id(c.args[0]) for c in ast.walk(init) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
              and c.func.id == "super" and c.args and isinstance(c.args[0], ast.Name)}
    if any(isinstance(n, ast.Name) and n.id == "Model" and id(n) not in supers for n in ast.walk(init)):
        raise unsupported(task, "Model.__init__ refers to Model itself")
    return body.replace("super(Model, self)", "super()") + "\n", "\n".join(imports)


def recognize(task_source: str, task_name: str = "task") -> Pattern:
    """The task's family and parameters, or UnsupportedTask saying what is outside the exemplar patterns."""
    import torch

    size = "small" if "SMALL_SIZES" in task_source else "default"  # the small size where the task has one
    try:
        traced = read_reference(task_source, f"{task_name}.py", size, sentinels=True)
    except ReferenceReadError as exc:
        raise unsupported(task_name, str(exc)) from exc
    fwd_args = traced.forward_args
    table = _function_table()
    nodes = [n for n in traced.gm.graph.nodes]
    alts = [n for n in traced.alt.graph.nodes]
    if len(nodes) != len(alts):
        raise unsupported(task_name, "the forward's graph changes with constructor scalars")
    outputs = [n for n in nodes if n.op == "output"]
    out_arg = outputs[0].args[0]
    from torch.fx import Node

    if not isinstance(out_arg, Node):
        raise unsupported(task_name, "the forward returns several values")
    out_shape = node_shape(out_arg)
    if out_shape is None:
        raise unsupported(task_name, "the output is not a single tensor")
    for n in nodes:
        if n.op in ("placeholder", "get_attr", "call_function", "call_method", "call_module") \
                and node_shape(n) is not None:
            dtype = node_dtype(n)
            if n.op == "placeholder" and dtype in (torch.bool, None):
                continue  # masks: read as 0/1 by the staged lowering
            if dtype not in (torch.float32, torch.int64) or (n is not out_arg and dtype != torch.float32):
                raise unsupported(task_name, f"{n.name} has dtype {dtype}; the exemplars are fp32")
    compute = [(n, a) for n, a in zip(nodes, alts, strict=True) if n.op in ("call_function", "call_method",
                                                                            "call_module")]
    if not compute:
        raise unsupported(task_name, "the forward computes nothing")
    init_source, imports = _init_and_imports(task_name, task_source)
    common = {"op_class": classify(traced.ops()), "forward_args": tuple(fwd_args), "init_source": init_source,
              "imports": imports}
    try:
        if "y" in fwd_args:  # the fixed patterns call the GEMM/conv output y
            raise unsupported(task_name, "a forward argument named y")
        canons = [_canon(task_name, n, a, traced, table) for n, a in compute]
        ops = [c.op for c in canons]
        if "matmul" in ops:
            return _match_matmul(task_name, canons, common)
        if any(op in ("softmax", "log_softmax", "sum", "mean", "amax", "argmax", "layer_norm") for op in ops):
            return _match_rowwise(task_name, canons, traced, out_shape, common)
        return _match_elementwise(task_name, canons, traced, out_arg, out_shape, common)
    except UnsupportedTask as first:
        return _staged(task_name, traced, out_arg, fwd_args, common, first)


def _staged(task: str, traced: Reference, out_node: Any, fwd_args: list[str], common: dict[str, Any],
            first: UnsupportedTask) -> Pattern:
    """The general path: lower the graph into stages (program.py); its refusal names what it could not do."""
    from .lower import LowerError, Lowering

    try:
        program = Lowering(traced, fwd_args).run(out_node)
    except LowerError as exc:
        raise unsupported(task, str(exc)) from first
    kinds = program.stage_kinds()
    desc = " -> ".join(kinds)
    if program.prefix_tensor >= 0:
        desc = f"GEMM/conv (PyTorch) -> {desc}"
    return Pattern("staged", description=f"staged program: {desc}", extra={"program": program}, **common)


def _prefix(task: str, canons: list[_Canon]) -> tuple[Prefix | None, list[_Canon]]:
    """A leading Linear/conv on a forward argument stays in PyTorch; the rest is ours."""
    first = canons[0]
    if first.op not in ("linear", "conv"):
        if any(c.op in ("linear", "conv") for c in canons):
            raise unsupported(task, "a Linear or convolution after other ops (only a leading one stays in PyTorch)")
        return None, canons
    x = first.tensors[0]
    if getattr(x, "op", "") != "placeholder":
        raise unsupported(task, "the Linear/convolution input is not a forward argument")
    if any(c.op in ("linear", "conv") for c in canons[1:]):
        raise unsupported(task, "several Linear/convolution layers (a whole model)")
    if first.op == "linear":
        pre = Prefix("linear", first.params["module"], x.target, first.params["bias"], bias_axis=-1)
    else:
        nd = first.params["nd"]
        pre = Prefix("conv", first.params["module"], x.target, first.params["bias"], conv_fn=f"conv{nd}d",
                     bias_axis=-(nd + 1))
    return pre, canons[1:]


def _match_elementwise(task: str, canons: list[_Canon], traced: Reference, out_node: Any,
                       out_shape: tuple[int, ...], common: dict[str, Any]) -> Pattern:
    prefix, rest = _prefix(task, canons)
    if not rest:
        what = f"only a {prefix.kind}" if prefix else "no computation"
        raise unsupported(task, f"{what}: nothing for a fused kernel to compute (dense layers stay in PyTorch)")
    b = _ChainBuilder(task, traced)
    if prefix is not None:
        b.operand(canons[0].node, "y")
    for c in rest:
        b.add(c)
    if b.env.get(out_node, ("", None))[0] != "v":
        raise unsupported(task, "the output is not computed by the elementwise chain")
    chain = b.chain(out_shape)
    if not any(o.kind == "full" for o in chain.operands):
        raise unsupported(task, "no operand has the output's shape")
    desc = " -> ".join(s.op for s in chain.steps)
    if prefix is not None:
        desc = f"{prefix.kind} (PyTorch) -> fused epilogue: {desc}"
    return Pattern("elementwise", description=desc, prefix=prefix, chain=chain, **common)


def _row_core(task: str, canons: list[_Canon], rank: int, b: _ChainBuilder) -> tuple[dict[str, Any], int]:
    """Match the row-wise core at the start of `canons`; returns its fields and how many nodes it spans."""
    c = canons[0]
    x = c.tensors[0]
    if c.op in ("softmax", "log_softmax"):
        if not _is_last_dim(c.params["dim"], rank):
            raise unsupported(task, f"{c.op} over a dimension other than the last")
        return {"row_op": c.op, "x": x}, 1
    if c.op in ("sum", "mean", "amax", "argmax"):
        if not _is_last_dim(c.params["dim"], rank):
            raise unsupported(task, f"{c.op} over a dimension other than the last")
        return {"row_op": c.op, "x": x, "keepdim": bool(c.params["keepdim"])}, 1
    if c.op == "layer_norm":
        eps = b.param(c, "eps")
        return {"row_op": "layernorm", "x": x, "weight": c.params["weight"], "bias": c.params["bias"],
                "eps": eps}, 1
    # rmsnorm written out: square(x) -> mean(-1, keepdim) -> + eps -> rsqrt -> x * r [-> * weight]
    seq = [k.op for k in canons[:6]]
    if len(seq) >= 5 and seq[0] in ("mul", "pow", "square") and seq[1] == "mean" and seq[2] == "add" \
            and seq[3] == "rsqrt" and seq[4] == "mul":
        sq, mean, add, rs, mul = canons[:5]
        xs = sq.tensors
        ok = (sq.op == "mul" and xs[0] is xs[1]) or (sq.op == "pow" and xs[1] == 2) or sq.op == "square"
        ok = ok and mean.tensors[0] is sq.node and mean.params["keepdim"] and _is_last_dim(mean.params["dim"], rank)
        ok = ok and add.tensors[0] is mean.node and rs.tensors[0] is add.node
        ok = ok and set(map(id, mul.tensors)) == {id(xs[0]), id(rs.node)}
        if ok:
            eps = b.scalar(add.tensors[1], add.alt.args[1])
            span, weight = 5, ""
            if len(canons) > 5 and canons[5].op == "mul":
                w = [t for t in canons[5].tensors if t is not mul.node]
                if len(w) == 1 and getattr(w[0], "op", "") == "get_attr" and mul.node in canons[5].tensors:
                    span, weight = 6, f"self.{w[0].target}"
            return {"row_op": "rmsnorm", "x": xs[0], "weight": weight, "eps": eps}, span
    raise unsupported(task, f"no row-wise pattern starts at {c.op}")


def _match_rowwise(task: str, canons: list[_Canon], traced: Reference, out_shape: tuple[int, ...],
                   common: dict[str, Any]) -> Pattern:
    prefix, rest = _prefix(task, canons)
    b = _ChainBuilder(task, traced)
    x_shape = node_shape(rest[0].tensors[0]) if rest and hasattr(rest[0].tensors[0], "meta") else None
    if x_shape is None:
        raise unsupported(task, "the row-wise op's input has no known shape")
    core, span = _row_core(task, rest, len(x_shape), b)
    x = core["x"]
    if prefix is not None and x is not canons[0].node:
        raise unsupported(task, "the row-wise op does not read the Linear's output")
    if prefix is None and getattr(x, "op", "") != "placeholder":
        raise unsupported(task, "the row-wise op does not read a forward argument")
    eps = core.get("eps")
    eps_expr = ""
    if eps is not None:
        eps_expr = repr(eps[1]) if eps[0] == "lit" else b.scalars[eps[1]]
    post = _ChainBuilder(task, traced)
    post.operand(rest[span - 1].node, "_core")
    for c in rest[span:]:
        post.add(c)
    chain = post.chain(out_shape)
    if any(o.expr != "_core" for o in chain.operands):
        raise unsupported(task, "the ops after the row-wise core read other tensors")
    if core["row_op"] == "argmax" and chain.steps:
        raise unsupported(task, "ops after argmax")
    row_op = core["row_op"]
    desc = row_op + (" -> " + " -> ".join(s.op for s in chain.steps) if chain.steps else "")
    if prefix is not None:
        desc = f"{prefix.kind} (PyTorch) -> {desc}"
    return Pattern("rowwise", description=desc, prefix=prefix, chain=chain, row_op=row_op,
                   row_input="y" if prefix is not None else x.target, row_weight=core.get("weight", ""),
                   row_bias=core.get("bias", ""), row_eps=eps_expr, keepdim=core.get("keepdim", False), **common)


def _match_matmul(task: str, canons: list[_Canon], common: dict[str, Any]) -> Pattern:
    if len(canons) != 1:
        raise unsupported(task, "a matmul combined with other ops (attention, MLP); only a plain matmul is covered")
    a, b_ = canons[0].tensors
    if getattr(a, "op", "") != "placeholder" or getattr(b_, "op", "") != "placeholder":
        raise unsupported(task, "matmul operands are not forward arguments")
    sa, sb = node_shape(a), node_shape(b_)
    if sa is None or sb is None:
        raise unsupported(task, "matmul operand shapes unknown")
    if len(sa) == 2 and len(sb) == 2:
        batched = False
    elif len(sa) == 3 and len(sb) == 3 and sa[0] == sb[0]:
        batched = True
    else:
        raise unsupported(task, f"matmul of shapes {sa} x {sb} (only 2-D x 2-D and batched 3-D x 3-D)")
    desc = ("batched " if batched else "") + "fp32 matmul"
    return Pattern("matmul", description=desc, mm_a=a.target, mm_b=b_.target, mm_batched=batched, **common)
