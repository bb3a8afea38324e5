"""A task's reference `Model` read through torch.fx: the one reader the analyze node and the offline coder share.

The model is built on the meta device (nothing is allocated, so any size is free) and traced once; shape
propagation writes every node's shape and dtype into its meta. The offline coder also has to know which
constants in the graph are constructor scalars (`self.scale`, a LeakyReLU slope), so that it emits them as
`self.<attr>` read at run time and never bakes them into a kernel (a baked init argument is cheat pattern 12):
`sentinels=True` traces a second time with those attributes set to sentinel values. Every trace holds
`threadsafe.FX_LOCK` (torch.fx patches torch globally while it traces).

The node helpers (`call_arg`, `node_shape`, `node_dtype`, `op_name`) read one FX node the same way for the analyze
node's operator list, the coder's pattern matcher and its staged lowering. torch loads only when a task is read.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any

_SENTINEL_BASE = 918273.0


class ReferenceReadError(Exception):
    """Why the reference could not be read (built, traced or traced with sentinels); the message says what failed."""


@dataclass
class Reference:
    """The reference built and traced: `gm` carries shapes in `node.meta` once `shaped`; `alt` is the trace
    with scalar attributes set to sentinels (when asked for), `sentinels` maps each sentinel to `self.<attr>`."""

    model: Any
    inputs: list[Any]
    forward_args: list[str]  # Model.forward's parameters after self
    gm: Any = None  # GraphModule; None until traced
    shaped: bool = False  # shape propagation ran through
    alt: Any = None
    sentinels: dict[float, str] = field(default_factory=dict)

    def ops(self) -> list[str]:
        """The operators in execution order (a module by its class name, a call by its function's name)."""
        return [name for node in self.gm.graph.nodes if (name := op_name(self.gm, node))]


def build(task_source: str, task_path: str, size: str = "default") -> Reference:
    """The reference model and its inputs on the meta device at `size` (not yet traced)."""
    import torch

    from htam_agent.evaluation.tasks import load_task_source

    try:
        task = load_task_source(task_source, task_path, size=size, check_inputs=False)
        with torch.device("meta"):
            model = task.model_cls(*task.get_init_inputs())
            inputs = task.get_inputs()
    except Exception as exc:  # noqa: BLE001 - a task that cannot be built on the meta device: the caller says so
        raise ReferenceReadError(f"building the reference Model on the meta device failed ({exc})") from exc
    return Reference(model, list(inputs), list(inspect.signature(task.model_cls.forward).parameters)[1:])


def trace(ref: Reference, *, sentinels: bool = False) -> Reference:
    """Trace `ref.model` and propagate the inputs' shapes (and, with `sentinels`, trace the sentinel copy).

    Fills `ref` as it goes, so a caller that can use less still has it after a ReferenceReadError: `gm` when only
    the shape propagation failed (data-dependent shapes)."""
    from htam_agent.threadsafe import FX_LOCK

    with FX_LOCK:
        return _trace_locked(ref, sentinels)


def read_reference(task_source: str, task_path: str, size: str = "default", *, sentinels: bool = False) -> Reference:
    """`build` then `trace`: the reference with shapes, or ReferenceReadError saying which step failed."""
    return trace(build(task_source, task_path, size), sentinels=sentinels)


def _trace_locked(ref: Reference, sentinels: bool) -> Reference:
    import torch
    import torch.fx
    from torch.fx.passes.shape_prop import ShapeProp

    try:
        ref.gm = torch.fx.symbolic_trace(ref.model)
        with torch.device("meta"):  # tensors forward creates land beside the inputs
            ShapeProp(ref.gm).propagate(*ref.inputs)
    except Exception as exc:  # noqa: BLE001 - FX cannot trace data-dependent control flow and the like
        raise ReferenceReadError(f"torch.fx could not trace Model.forward ({type(exc).__name__}: {exc})") from exc
    ref.shaped = True
    if not sentinels:
        return ref
    attrs = _scalar_attrs(ref.model)
    saved = [(mod, key, getattr(mod, key)) for mod, key, _ in attrs]
    try:
        for i, (mod, key, expr) in enumerate(attrs):
            value = _SENTINEL_BASE + 17.25 * i
            setattr(mod, key, value if isinstance(getattr(mod, key), float) else int(value))
            ref.sentinels[float(getattr(mod, key))] = expr
        ref.alt = torch.fx.symbolic_trace(ref.model)
    except Exception as exc:  # noqa: BLE001 - the graph's structure follows a constructor scalar
        raise ReferenceReadError(f"the forward's structure depends on constructor scalars ({exc})") from exc
    finally:
        for mod, key, value in saved:
            setattr(mod, key, value)
    return ref


def _scalar_attrs(model: Any) -> list[tuple[Any, str, str]]:
    """(module, attribute, expression) for every int/float attribute a forward might read."""
    found = []
    for path, mod in model.named_modules():
        for key, value in vars(mod).items():
            if key.startswith("_") or key == "training" or type(value) not in (int, float):
                continue
            found.append((mod, key, "self." + (f"{path}." if path else "") + key))
    return found


def source_ops(task_source: str) -> list[str]:
    """The `torch.*`/`F.*` calls in forward's source, in order: the operator list where tracing fails."""
    body = task_source.split("def forward", 1)[-1]
    return [m.lower() for m in re.findall(r"(?:torch|F|nn\.functional)\.([A-Za-z_0-9]+)\(", body)]


# -- one FX node -------------------------------------------------------------------------------------------------
def op_name(gm: Any, node: Any) -> str:
    """A call's operator name (lower case, no namespace, no underscores around it: `relu`, `conv2d` for an
    nn.Conv2d, `add` for `operator.add`); "" for a node that calls nothing."""
    if node.op == "call_module":
        return type(gm.get_submodule(node.target)).__name__.lower()
    if node.op in ("call_function", "call_method"):
        name = getattr(node.target, "__name__", None) or str(node.target)
        return name.lower().strip("_").split(".")[-1]
    return ""


def call_arg(node: Any, idx: int, name: str, default: Any = None) -> Any:
    """A call's argument given by position `idx` or keyword `name`."""
    if len(node.args) > idx:
        return node.args[idx]
    return node.kwargs.get(name, default)


def is_node(a: Any) -> bool:
    """Whether an argument is another node's value (a tensor or tuple of the graph), not a constant."""
    from torch.fx import Node

    return isinstance(a, Node)


def node_shape(node: Any) -> tuple[int, ...] | None:
    """The node's tensor shape from shape propagation; None for a non-tensor or an argument that is no node."""
    meta = node.meta.get("tensor_meta") if hasattr(node, "meta") else None
    return tuple(meta.shape) if meta is not None and hasattr(meta, "shape") else None


def node_dtype(node: Any) -> Any:
    """The node's torch dtype from shape propagation; None for a non-tensor."""
    return getattr(node.meta.get("tensor_meta"), "dtype", None)


__all__ = ["Reference", "ReferenceReadError", "build", "call_arg", "is_node", "node_dtype", "node_shape", "op_name",
           "read_reference", "source_ops", "trace"]
