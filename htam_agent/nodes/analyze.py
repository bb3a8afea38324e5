"""Analyze the state: what kind of operator this is, how the search stands, and what limits the best kernel.

The operator class comes from the reference's FX graph (built on the meta device, so nothing is allocated), and
so do the shape facts the memory's strategies are written for (row length, reduction size, channels, spatial
size, at the size the evaluator times), in one reading by `coder.reference` (the offline coder's reader too),
classified by `coder.opclass` (the coder's patterns and the verdict table use the same classifier); the status
from the latest verdicts; the bottleneck from the best verdict's roofline fraction and bound (read through
`Readout`), or, before any candidate is timed, from the operator class.
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from htam_agent.coder.opclass import CLASS_OPS, HEAVY, classify, features_of
from htam_agent.coder.reference import Reference, ReferenceReadError, build, op_name, source_ops, trace
from htam_agent.context import RunContext
from htam_agent.evaluation.parent.readout import NEAR_ROOFLINE, Readout
from htam_agent.state import AgentState, Analysis, latest_per_variant, step_candidates

_MEMORY_BOUND = {"elementwise", "reduction", "normalization", "pooling", "scan", "fused"}
_NORM_MODULES = {"layernorm", "groupnorm", "batchnorm1d", "batchnorm2d", "batchnorm3d", "instancenorm1d",
                 "instancenorm2d", "instancenorm3d", "rmsnorm"}


def _reduce_size(gm: Any, shape: tuple[int, ...]) -> int | None:
    """Elements reduced or normalized together by the reference's first reduction or normalization (from the
    FX graph with shapes propagated on the meta device); None when there is none or it cannot tell."""
    import math

    wanted = {op for cls, names in CLASS_OPS if cls in ("normalization", "reduction") for op in names}
    for node in gm.graph.nodes:
        name = op_name(gm, node)
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


def reference_facts(task_source: str, task_path: str, size: str = "default") -> tuple[list[str], dict[str, int]]:
    """The reference's operators in execution order and its shape facts, from one FX reading at `size` (the one
    the evaluator times), on the meta device (nothing is allocated).

    The operators come from a regex over forward's source where the reference cannot be traced. The shape facts
    (memory.schema.SHAPE_FACTS) are measured on the largest input: empty when the task cannot be built at
    `size`, without the reduction size when shapes cannot be propagated through the graph."""
    try:
        ref = build(task_source, task_path, size)
    except ReferenceReadError:  # a task that needs real data to build: no shape facts
        if size != "default":
            return reference_facts(task_source, task_path)[0], {}
        return source_ops(task_source), {}
    try:
        trace(ref)
    except ReferenceReadError:  # data-dependent control flow: the input's shapes only (the graph, if traced)
        pass
    return (ref.ops() if ref.gm is not None else source_ops(task_source)), _shape_facts(ref)


def reference_ops(task_source: str, task_path: str) -> list[str]:
    """The reference's operators in execution order (`reference_facts`)."""
    return reference_facts(task_source, task_path)[0]


def shape_facts(task_source: str, task_path: str, size: str = "default") -> dict[str, int]:
    """The task's shapes the memory's strategies are written for (`reference_facts`)."""
    return reference_facts(task_source, task_path, size)[1]


def _shape_facts(ref: Reference) -> dict[str, int]:
    import math

    import torch

    tensors = [x for x in ref.inputs if isinstance(x, torch.Tensor) and x.dim() > 0]
    if not tensors:
        return {}
    x = max(tensors, key=lambda t: t.numel())
    shape = tuple(int(d) for d in x.shape)
    facts = {"elements": math.prod(shape), "row": shape[-1]}
    if len(shape) >= 3:
        facts["channels"] = shape[1]
        facts["spatial"] = math.prod(shape[2:])
    try:
        reduce = _reduce_size(ref.gm, shape) if ref.shaped else None
    except Exception:  # noqa: BLE001 - a graph the size reader does not know: the input's shapes only
        reduce = None
    if reduce:
        facts["reduce"] = int(reduce)
    return {k: v for k, v in facts.items() if v > 0}


def shapes_text(facts: dict[str, int]) -> str:
    """The shape facts in words for the state's description (and so for retrieval's embedding)."""
    names = {"elements": "elements", "row": "row length", "reduce": "reduction size", "channels": "channels",
             "spatial": "spatial size"}
    return ", ".join(f"{names[k]} {v:,}" for k, v in facts.items() if k in names)


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
    if op_class in HEAVY or op_class == "model":
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
    ops, shapes = prev.get("ops"), prev.get("shapes")
    if ops is None or shapes is None:  # the first step reads the reference once; later steps keep what it read
        read_ops, read_shapes = reference_facts(state["task_source"], state["task_path"], _timed_size(state, ctx))
        ops = read_ops if ops is None else ops
        shapes = read_shapes if shapes is None else shapes
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
