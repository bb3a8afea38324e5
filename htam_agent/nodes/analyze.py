"""Analyze the state: what kind of operator this is, how the search stands, and what limits the best kernel.

The operator class comes from the reference's FX graph (built on the meta device, so nothing is allocated), and
so do the shape facts the memory's strategies are written for (row length, reduction size, channels, spatial
size, at the size the evaluator times); the status from the latest verdicts; the bottleneck from the best
verdict's roofline fraction and bound (read through `Readout`), or, before any candidate is timed, from the
operator class.
"""

from __future__ import annotations

import re
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from htam_agent.context import RunContext
from htam_agent.evaluation.parent.readout import NEAR_ROOFLINE, Readout
from htam_agent.state import AgentState, Analysis, latest_per_variant, step_candidates

_ELEMENTWISE = {
    "relu", "leaky_relu", "gelu", "silu", "sigmoid", "tanh", "hardtanh", "hardswish", "hardsigmoid", "elu",
    "selu", "softplus", "mish", "mul", "add", "sub", "div", "truediv", "neg", "exp", "log", "abs", "clamp",
    "clip", "pow", "sqrt", "rsqrt", "where", "maximum", "minimum", "erf", "dropout", "contiguous", "view",
    "reshape", "flatten", "permute", "transpose", "getitem", "getattr", "size", "squeeze", "unsqueeze", "iadd",
    "imul", "floordiv", "swish", "identity", "relu6", "celu", "gt", "lt", "ge", "le", "sign", "to", "float",
}
_CLASS_OPS = [
    ("attention", {"scaled_dot_product_attention", "multiheadattention"}),
    ("convolution", {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                     "convtranspose2d", "convtranspose3d", "convtranspose1d"}),
    ("matmul", {"linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "einsum"}),
    ("pooling", {"max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
                 "maxpool1d", "maxpool2d", "maxpool3d", "avgpool1d", "avgpool2d", "avgpool3d",
                 "adaptive_avg_pool2d", "adaptiveavgpool2d"}),
    ("normalization", {"softmax", "log_softmax", "layer_norm", "layernorm", "rms_norm", "rmsnorm", "group_norm",
                       "groupnorm", "batch_norm", "batchnorm2d", "batchnorm1d", "instance_norm", "instancenorm2d",
                       "normalize", "logsoftmax"}),
    ("scan", {"cumsum", "cumprod", "cummax", "cummin"}),
    ("reduction", {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "norm", "var",
                   "std", "logsumexp", "cross_entropy", "mse_loss", "nll_loss", "kl_div", "smooth_l1_loss",
                   "l1_loss", "crossentropyloss"}),
]
_HEAVY = {"attention", "convolution", "matmul"}
_MEMORY_BOUND = {"elementwise", "reduction", "normalization", "pooling", "scan", "fused"}


def _op_name(target: Any) -> str:
    name = getattr(target, "__name__", None) or str(target)
    return name.lower().strip("_").split(".")[-1]


def reference_ops(task_source: str, task_path: str) -> list[str]:
    """The reference's operators in execution order (FX); a regex over forward's source when tracing fails."""
    import torch

    from htam_agent.evaluation.tasks import load_task_source

    task = load_task_source(task_source, task_path, check_inputs=False)
    from htam_agent.threadsafe import FX_LOCK

    try:
        with torch.device("meta"):
            model = task.model_cls(*task.get_init_inputs())
        with FX_LOCK:  # symbolic_trace patches torch globally: one tracer at a time per process
            gm = torch.fx.symbolic_trace(model)
    except Exception:  # noqa: BLE001 - data-dependent control flow etc.: read the source instead
        body = task_source.split("def forward", 1)[-1]
        return [m.lower() for m in re.findall(r"(?:torch|F|nn\.functional)\.([A-Za-z_0-9]+)\(", body)]
    ops: list[str] = []
    for node in gm.graph.nodes:
        if node.op == "call_module":
            ops.append(type(gm.get_submodule(node.target)).__name__.lower())
        elif node.op in ("call_function", "call_method"):
            ops.append(_op_name(node.target))
    return ops


_NORM_MODULES = {"layernorm", "groupnorm", "batchnorm1d", "batchnorm2d", "batchnorm3d", "instancenorm1d",
                 "instancenorm2d", "instancenorm3d", "rmsnorm"}


def _reduce_size(gm: Any, shape: tuple[int, ...]) -> int | None:
    """Elements reduced or normalized together by the reference's first reduction or normalization (from the
    FX graph with shapes propagated on the meta device); None when there is none or it cannot tell."""
    import math

    wanted = {op for cls, names in _CLASS_OPS if cls in ("normalization", "reduction") for op in names}
    for node in gm.graph.nodes:
        name = (type(gm.get_submodule(node.target)).__name__.lower() if node.op == "call_module"
                else _op_name(node.target) if node.op in ("call_function", "call_method") else "")
        if name not in wanted and name not in _NORM_MODULES:
            continue
        src = node.args[0] if node.args else None
        meta = getattr(src, "meta", {}).get("tensor_meta") if src is not None else None
        in_shape = tuple(meta.shape) if meta is not None else shape
        if node.op == "call_module":
            mod = gm.get_submodule(node.target)
            spatial = math.prod(in_shape[2:]) if len(in_shape) > 2 else 1
            if name == "layernorm" or name == "rmsnorm":
                return math.prod(getattr(mod, "normalized_shape", in_shape[-1:]))
            if name == "groupnorm":
                return in_shape[1] // max(1, mod.num_groups) * spatial
            if name.startswith("batchnorm"):
                return in_shape[0] * spatial
            return spatial  # instance norm
        dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else None)
        if isinstance(dim, int):
            return in_shape[dim]
        if isinstance(dim, tuple | list) and all(isinstance(d, int) for d in dim):
            return math.prod(in_shape[d] for d in dim)
        out = getattr(node, "meta", {}).get("tensor_meta")
        if out is not None and math.prod(out.shape) < math.prod(in_shape):
            return math.prod(in_shape) // max(1, math.prod(out.shape))
        return in_shape[-1] if in_shape else None
    return None


def shape_facts(task_source: str, task_path: str, size: str = "default") -> dict[str, int]:
    """The task's shapes the memory's strategies are written for (memory.schema.SHAPE_FACTS), measured on the
    reference's largest input at the size the evaluator times, on the meta device (nothing is allocated).
    Empty when the task cannot be built that way."""
    import math

    import torch

    from htam_agent.evaluation.tasks import load_task_source
    from htam_agent.threadsafe import FX_LOCK

    try:
        task = load_task_source(task_source, task_path, size=size, check_inputs=False)
        with torch.device("meta"):
            model = task.model_cls(*task.get_init_inputs())
            inputs = task.get_inputs()
    except Exception:  # noqa: BLE001 - a task that needs real data to build: no shape facts
        return {}
    tensors = [x for x in inputs if isinstance(x, torch.Tensor) and x.dim() > 0]
    if not tensors:
        return {}
    x = max(tensors, key=lambda t: t.numel())
    shape = tuple(int(d) for d in x.shape)
    facts = {"elements": math.prod(shape), "row": shape[-1]}
    if len(shape) >= 3:
        facts["channels"] = shape[1]
        facts["spatial"] = math.prod(shape[2:])
    try:
        from torch.fx.passes.shape_prop import ShapeProp

        with FX_LOCK:
            gm = torch.fx.symbolic_trace(model)
        with torch.device("meta"):
            ShapeProp(gm).propagate(*inputs)
        reduce = _reduce_size(gm, shape)
    except Exception:  # noqa: BLE001 - data-dependent control flow: the shapes of the input only
        reduce = None
    if reduce:
        facts["reduce"] = int(reduce)
    return {k: v for k, v in facts.items() if v > 0}


def shapes_text(facts: dict[str, int]) -> str:
    """The shape facts in words for the state's description (and so for retrieval's embedding)."""
    names = {"elements": "elements", "row": "row length", "reduce": "reduction size", "channels": "channels",
             "spatial": "spatial size"}
    return ", ".join(f"{names[k]} {v:,}" for k, v in facts.items() if k in names)


def classify(ops: list[str]) -> str:
    """One operator class (memory.schema.OP_CLASSES) for the reference's op list."""
    found = [cls for op in ops for cls, names in _CLASS_OPS if op in names]
    heavy = [c for c in found if c in _HEAVY]
    if len(heavy) >= 3 or (len(heavy) >= 2 and len(set(heavy)) > 1):
        return "model"
    others = [op for op in ops if op not in _ELEMENTWISE or op in ("dropout",)]
    compute_ops = [op for op in ops if op not in {"getitem", "getattr", "size", "view", "reshape", "contiguous",
                                                    "flatten", "permute", "transpose", "squeeze", "unsqueeze"}]
    if not found:
        return "elementwise" if compute_ops and not [o for o in others if o not in _ELEMENTWISE] else "other"
    main = heavy[0] if heavy else found[0]
    extra = len(compute_ops) - 1
    if main in _HEAVY and extra >= 1:
        return "attention" if main == "attention" else "fused"
    if len(set(found)) > 1:
        return "fused"
    return main


_SHAPE_OPS = {"getitem", "getattr", "size", "view", "reshape", "contiguous", "flatten", "permute", "transpose",
              "squeeze", "unsqueeze", "to", "float", "identity", "dropout"}


def features_of(ops: list[str]) -> list[str]:
    """The operator classes the reference's ops contain (a conv + ReLU chain: convolution and elementwise), so
    the memory offers only strategies that fit work the reference really does."""
    found = {cls for op in ops for cls, names in _CLASS_OPS if op in names}
    if any(op in _ELEMENTWISE and op not in _SHAPE_OPS for op in ops):
        found.add("elementwise")
    return sorted(found)


def status_of(state: AgentState) -> str:
    best = state.get("best")
    if best:
        frac = best.get("roofline_fraction")
        return "near_roofline" if frac is not None and frac >= NEAR_ROOFLINE else "correct_slow"
    step = state["step"]
    if step == 0:
        return "none"
    last = list(latest_per_variant(step_candidates(state, step - 1)).values())
    if not last:
        return "none"
    verdicts = [(c.get("verdict") or c.get("compile") or {"status": "compile_error"}) for c in last]
    if all(Readout(v).failed_to_compile for v in verdicts) or all(not c.get("code") for c in last):
        return "compile_error"
    return "incorrect"


def bottleneck_of(op_class: str, best: dict[str, Any] | None) -> tuple[str, str]:
    """(bottleneck, why): from the roofline when a timed verdict exists, else from the operator class."""
    read = Readout((best or {}).get("verdict"))
    frac, cand_ms = read.roofline_fraction, read.median_ms("candidate")
    if frac is not None and cand_ms:
        bound = (read.facts() or {}).get("bound") or "memory"
        if cand_ms < 0.02:
            return "latency", f"{cand_ms * 1000:.1f} us per call: launch and host overhead dominate"
        if frac < 0.1:
            return "occupancy", (f"at {frac:.0%} of the {bound} roofline: the device is mostly idle "
                                 "(too little parallelism or poor occupancy)")
        return ("compute" if bound == "compute" else "memory"), f"at {frac:.0%} of the {bound} roofline"
    if op_class in _MEMORY_BOUND:
        return "memory", f"{op_class} operators move more bytes than they compute (estimated, not yet timed)"
    if op_class in _HEAVY or op_class == "model":
        return "compute", f"{op_class} operators are FLOP-heavy (estimated, not yet timed)"
    return "unknown", "no timing yet"


def _timed_size(state: AgentState, ctx: RunContext) -> str:
    """The size the evaluator times this task at: the run's, else the backend's default when the task has it."""
    if ctx.size:
        return ctx.size
    from htam_agent.backend_registry import spec
    from htam_agent.evaluation.tasks import has_size

    want = spec(ctx.backend).default_size
    try:
        return want if want != "default" and has_size(state["task_source"], want, state["task_path"]) else "default"
    except Exception:  # noqa: BLE001 - no derived size: the file's own
        return "default"


def analyze(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    prev = state.get("analysis") or {}
    if prev.get("ops") is not None:
        ops = prev["ops"]
    else:
        ops = reference_ops(state["task_source"], state["task_path"])
    if prev.get("shapes") is not None:
        shapes = prev["shapes"]
    else:
        shapes = shape_facts(state["task_source"], state["task_path"], _timed_size(state, ctx))
    op_class = prev.get("op_class") or classify(ops)
    status = status_of(state)
    bottleneck, why = bottleneck_of(op_class, state.get("best"))
    best = state.get("best")
    speed = f"best so far {best['speedup_vs_eager']:.2f}x over eager" if best and best.get(
        "speedup_vs_eager") else "no accepted kernel yet"
    shown = ", ".join(dict.fromkeys(o for o in ops if o not in ("getattr", "getitem", "size")))[:200]
    sizes = f" Shapes: {shapes_text(shapes)}." if shapes else ""
    desc = f"Reference ops: {shown}.{sizes} {why}; {speed}."
    analysis: Analysis = {"op_class": op_class, "bottleneck": bottleneck, "status": status, "description": desc,
                          "ops": ops, "features": features_of(ops), "shapes": shapes}
    get_stream_writer()({"event": "analyze", "step": state["step"], "op_class": op_class,
                         "bottleneck": bottleneck, "status": status, "backend": ctx.backend})
    return {"analysis": analysis}
