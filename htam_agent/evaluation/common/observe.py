"""What both processes observe about a forward: its outputs flattened, bitwise sameness, the ATen ops it runs.

The sandbox runs these on the candidate (launch evidence, `reference_ops`), the checker on the reference and
on outputs it holds; one copy keeps both sides counting the same way. Imports torch lazily, nothing of ours.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

# ATen ops that move or allocate memory without computing anything: not evidence of computing the result.
TRIVIAL_OPS = frozenset(
    "aten::" + n for n in (
        "empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like ones ones_like full "
        "full_like fill_ zero_ view reshape _reshape_alias _unsafe_view as_strided contiguous clone copy_ "
        "to _to_copy t transpose permute expand expand_as squeeze unsqueeze flatten unflatten select slice "
        "narrow detach alias resolve_conj resolve_neg lift_fresh size stride numel item _local_scalar_dense "
        "is_nonzero result_type split chunk unbind view_as numpy_T contiguous_ record_stream set_ "
        "_has_compatible_shallow_copy_type is_same_size"
    ).split()
)


def flatten_outputs(out: Any) -> list[Any]:
    """A forward's outputs as one flat list (nested lists and tuples opened)."""
    if isinstance(out, (list, tuple)):
        items: list[Any] = []
        for o in out:
            items.extend(flatten_outputs(o))
        return items
    return [out]


def tensors(values: Iterable[Any]) -> list[Any]:
    import torch

    out: list[Any] = []
    for v in values:
        if isinstance(v, (list, tuple)):
            out.extend(tensors(v))
        elif isinstance(v, torch.Tensor):
            out.append(v)
    return out


def same(a: Any, b: Any) -> bool:
    """Bitwise equal content, NaN equal to NaN."""
    import torch

    if a.shape != b.shape:
        return False
    fa, fb = a.reshape(-1), b.reshape(-1)
    step = 1 << 20  # in chunks: four full-size boolean temporaries were a footprint of a float32 output
    return all(bool(((x == y) | (torch.isnan(x) & torch.isnan(y))).all())
               for x, y in ((fa[i:i + step], fb[i:i + step]) for i in range(0, fa.numel(), step)))


def aten_ops(fn: Callable[[], Any]) -> set[tuple[str, str]]:
    """The ATen ops `fn` runs, with their input shapes (dispatcher events: the same on CPU and GPU).

    Shapes matter: a split reduction whose kernel writes partial sums and finishes with `torch.sum` over
    them runs `aten::sum` on a much smaller tensor than the reference does, which is honest work sharing.
    """
    from torch.autograd.profiler import profile

    # The autograd profiler, which `torch.profiler.profile` wraps: the same Kineto events, without the
    # wrapper's `hasattr(torch, "_inductor")`, whose lazy import of inductor and dynamo cost 1.2-1.5 s at
    # the first profile of every checker and sandbox on the 2-core VM.
    with profile(use_cpu=True, record_shapes=True, use_kineto=True) as prof:
        fn()
    return {(e.name, str(e.input_shapes)) for e in prof.function_events if e.name.startswith("aten::")}


def compute_ops(ops: set[tuple[str, str]]) -> set[tuple[str, str]]:
    return {o for o in ops if o[0] not in TRIVIAL_OPS}
