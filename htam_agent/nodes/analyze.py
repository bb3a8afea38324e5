"""Analyze the state: what kind of operator this is, how the search stands, and what limits the best kernel.

The operator class comes from the reference's FX graph (built on the meta device, so nothing is allocated);
the status from the latest verdicts; the bottleneck from the best verdict's roofline fraction and bound, or,
before any candidate is timed, from the operator class.
"""

from __future__ import annotations

import re
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from htam_agent.context import RunContext
from htam_agent.evaluation.readout import NEAR_ROOFLINE, Readout
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
    step = state.get("step", 0)
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
    verdict = (best or {}).get("verdict") or {}
    roof = verdict.get("roofline") or {}
    cand_ms = ((verdict.get("timing") or {}).get("candidate") or {}).get("median_ms")
    if roof.get("fraction") is not None and cand_ms:
        frac, bound = roof["fraction"], roof.get("bound", "memory")
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


def analyze(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    prev = state.get("analysis") or {}
    if prev.get("ops") is not None:
        ops = prev["ops"]
    else:
        ops = reference_ops(state["task_source"], state["task_path"])
    op_class = prev.get("op_class") or classify(ops)
    status = status_of(state)
    bottleneck, why = bottleneck_of(op_class, state.get("best"))
    best = state.get("best")
    speed = f"best so far {best['speedup_vs_eager']:.2f}x over eager" if best and best.get(
        "speedup_vs_eager") else "no accepted kernel yet"
    shown = ", ".join(dict.fromkeys(o for o in ops if o not in ("getattr", "getitem", "size")))[:200]
    desc = f"Reference ops: {shown}. {why}; {speed}."
    analysis: Analysis = {"op_class": op_class, "bottleneck": bottleneck, "status": status, "description": desc,
                          "ops": ops, "features": features_of(ops)}
    get_stream_writer()({"event": "analyze", "step": state.get("step", 0), "op_class": op_class,
                         "bottleneck": bottleneck, "status": status, "backend": ctx.backend})
    return {"analysis": analysis}
