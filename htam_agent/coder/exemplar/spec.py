"""What pattern recognition found in a task: a plain, torch-free description the families render from.

A `Ref` names a value inside a fused kernel: ("in", i) the i-th tensor operand, ("sc", j) the j-th runtime
scalar (read from the module in `forward`, never baked in), ("v", k) the k-th step's result, ("lit", x) a
literal written in the task's source.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

Ref = tuple[str, Any]


@dataclass(frozen=True)
class Step:
    """One elementwise op of a fused chain; `args` are Refs (tensor values first, then scalar parameters)."""

    op: str
    args: tuple[Ref, ...]


@dataclass(frozen=True)
class Operand:
    """A tensor read by a fused kernel: `full` (the output's shape) or broadcast along one axis only."""

    expr: str  # Python expression in ModelNew.forward
    kind: str = "full"  # full | axis
    axis: int = -1  # negative axis of the output the operand varies along (kind == "axis")


@dataclass(frozen=True)
class Chain:
    """A fused elementwise computation: result = the last step (or operand 0 when there are no steps)."""

    operands: tuple[Operand, ...]
    scalars: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()

    def with_leading_add(self, operand: Operand) -> Chain:
        """out = chain(in0 + operand): the GEMM/conv bias moved from PyTorch into the fused epilogue."""
        new_idx = len(self.operands)

        def shift(ref: Ref) -> Ref:
            if ref == ("in", 0):
                return ("v", 0)
            if ref[0] == "v":
                return ("v", ref[1] + 1)
            return ref

        steps = [Step("add", (("in", 0), ("in", new_idx)))]
        steps += [Step(s.op, tuple(shift(a) for a in s.args)) for s in self.steps]
        return replace(self, operands=self.operands + (operand,), steps=tuple(steps))


@dataclass(frozen=True)
class Prefix:
    """The producer that stays in PyTorch (cuBLAS/cuDNN/MKL): a Linear or a convolution module."""

    kind: str  # linear | conv
    module: str  # attribute path on the model, e.g. "linear"
    input_expr: str
    has_bias: bool
    conv_fn: str = ""  # conv1d | conv2d | conv3d
    bias_axis: int = -1  # output axis the bias varies along

    def call(self, with_bias: bool) -> str:
        """The PyTorch expression computing the producer, with or without its bias."""
        m = f"self.{self.module}"
        bias = f"{m}.bias" if with_bias and self.has_bias else "None"
        if self.kind == "linear":
            return f"F.linear({self.input_expr}, {m}.weight, {bias})"
        return (f"F.{self.conv_fn}({self.input_expr}, {m}.weight, {bias}, {m}.stride, {m}.padding, "
                f"{m}.dilation, {m}.groups)")


@dataclass(frozen=True)
class Pattern:
    """A recognised task: its family, what PyTorch keeps, and what our kernel computes."""

    family: str
    op_class: str
    description: str
    forward_args: tuple[str, ...]
    init_source: str  # ModelNew.__init__ (the reference's, so parameters and state_dict keys match)
    imports: str
    prefix: Prefix | None = None
    chain: Chain | None = None  # elementwise: the whole kernel; rowwise: the post-op chain (in0 = core output)
    row_op: str = ""  # sum | mean | amax | argmax | softmax | log_softmax | layernorm | rmsnorm
    row_input: str = ""
    row_weight: str = ""
    row_bias: str = ""
    row_eps: str = ""
    keepdim: bool = False
    mm_a: str = ""
    mm_b: str = ""
    mm_batched: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
