"""A staged program: the general form the exemplar coder lowers KernelBench-style references into.

Where the fixed patterns (one elementwise chain, one row-wise op, one matmul) do not match, the reference's
FX graph is lowered into a short list of stages, each one kernel: `map` (a fused elementwise expression),
`reduce` (sum/mean/max/min/prod/argmax/argmin/logsumexp/mean-and-variance over a contiguous range of dims,
or over every dim but one), `norm` (softmax, log-softmax, standardization, one kernel per group of rows),
`pool` (max/avg windows in 1-3 dims) and `scan` (cumsum/cumprod, forward or reversed). A GEMM/convolution
producer stays in PyTorch. Elementwise ops never get a stage of their own when they can ride along: they
become the `post` expression of the stage before them or the input expression of the stage after them, so a
level-2 chain is a handful of kernels instead of one per op.

Everything that depends on sizes is decided at run time from the tensors' shapes (the launcher computes the
layout and the broadcast index maps); dims, eps, kernel sizes and scalars are read from the module in
`forward` (`self.dim`, `self.bn.eps`), never baked in. Plain dataclasses, no torch: families render from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Shape = tuple[int, ...]


@dataclass(frozen=True)
class E:
    """An expression node. kind: leaf (tensor `val`), self (the stage's own raw result), pend (a stage not
    yet finalized; lowering only), lit (a float literal), sc (runtime scalar: Python expression `val`),
    op (`op` over `args`), view (shape change with the same flat index; `val` is the view spec)."""

    kind: str
    shape: Shape | None = None
    op: str = ""
    args: tuple[E, ...] = ()
    val: Any = None


@dataclass(frozen=True)
class TensorRef:
    """A materialized tensor a stage reads: a Python expression in `ModelNew.forward` and its traced shape."""

    expr: str
    shape: Shape
    dtype: str = "float"  # float | long | bool


@dataclass
class Stage:
    """One kernel. `inp` is the input expression (map: the whole expression), `post` is applied to the
    stage's raw result at each output element (a `self` leaf stands for it). `params` holds Python
    expressions evaluated in forward (dims, eps, window sizes) and static choices (op, layout form)."""

    kind: str  # map | reduce | norm | pool | scan
    inp: E
    out_shape: Shape
    params: dict[str, Any] = field(default_factory=dict)
    out_dtype: str = "float"
    post: E | None = None
    out: int = -1  # index into Program.tensors once finalized


@dataclass
class Program:
    tensors: list[TensorRef]
    stages: list[Stage]
    result: int  # tensor id returned by forward
    prefix_lines: tuple[str, ...] = ()  # forward lines computing PyTorch producers (y = ...)
    prefix_has_bias: bool = False
    prefix_nobias_lines: tuple[str, ...] = ()  # the same producer without its bias (bias moved into a stage)
    bias_leaf: int = -1  # tensor id of the producer's bias, broadcast to its output (when moved)
    prefix_tensor: int = -1  # tensor id of the producer's output

    def stage_kinds(self) -> list[str]:
        return [s.kind + (f":{s.params.get('op')}" if s.params.get("op") else "") for s in self.stages]


def leaves(e: E | None) -> list[E]:
    """Every leaf/pend/self node of an expression (repeats included)."""
    if e is None:
        return []
    if e.kind in ("leaf", "pend", "self"):
        return [e]
    out: list[E] = []
    for a in e.args:
        out += leaves(a)
    return out


def replace(e: E, fn: Any) -> E:
    """Rebuild `e` with fn applied to each leaf/pend/self node (fn returns a node)."""
    if e.kind in ("leaf", "pend", "self"):
        return fn(e)
    if not e.args:
        return e
    return E(e.kind, e.shape, e.op, tuple(replace(a, fn) for a in e.args), e.val)
