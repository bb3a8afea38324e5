"""A task's own memory: its inputs, its parameters and buffers, and one output, counted on the meta device.

The evaluator's memory is judged against this (docs/evaluation.md, "Memory"): a verdict may hold a small multiple
of it, never an unbounded number of full-size copies. Counting on the meta device allocates nothing, so a
6 GiB KernelBench problem is measured in milliseconds on a machine that could not hold it. Shared by the
parent (the up-front fit check), the checker (output shapes for the calibration) and the benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Footprint:
    inputs: int  # bytes
    params: int  # parameters and buffers
    output: int  # one forward's outputs
    output_spec: tuple[tuple[tuple[int, ...], str], ...] = ()  # (shape, dtype) of each output tensor

    @property
    def total(self) -> int:
        return self.inputs + self.params + self.output

    def as_dict(self) -> dict[str, Any]:
        return {"inputs_bytes": self.inputs, "params_bytes": self.params, "output_bytes": self.output,
                "total_bytes": self.total}


def _nbytes(values: Any) -> int:
    import torch

    from ..common.observe import flatten_outputs

    return sum(t.numel() * t.element_size() for t in flatten_outputs(values) if isinstance(t, torch.Tensor))


def measure(task: Any, init: list[Any] | None = None) -> Footprint:
    """The footprint of `task` (a loaded `Task`) at its size, without allocating: the model is built and run on
    the meta device. A reference that cannot run there (a data-dependent shape, `.item()`) raises; callers that
    must not fail use `try_measure`."""
    import torch

    from ..common.observe import flatten_outputs

    with torch.device("meta"):
        torch.manual_seed(0)
        inputs = task.get_inputs()
        model = task.model_cls(*(task.get_init_inputs() if init is None else init))
    inputs = [x.to("meta") if isinstance(x, torch.Tensor) else x for x in inputs]
    model = model.to("meta")
    params = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
    with torch.no_grad():
        out = model(*inputs)
    spec = tuple((tuple(o.shape), str(o.dtype).removeprefix("torch.")) for o in flatten_outputs(out)
                 if isinstance(o, torch.Tensor))
    return Footprint(_nbytes(inputs), params, _nbytes(out), spec)


def try_measure(task: Any) -> Footprint | None:
    try:
        return measure(task)
    except Exception:  # a reference the meta device cannot run: no footprint, no fit check
        return None


__all__ = ["Footprint", "measure", "try_measure"]
