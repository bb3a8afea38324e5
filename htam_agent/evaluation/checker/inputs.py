"""Inputs the checker draws: seeded sets with varied statistics, the trial plan, and in-place perturbation.

Runs in the checker only. Seeds are drawn per evaluation from the checker's own randomness and never leave
its process (the sandbox sees input values, not how they were made), so a candidate cannot precompute the
trial or timing inputs from the evaluator's source.
"""

from __future__ import annotations

import secrets
from typing import Any

from ..tasks import validate_inputs
from . import draws
from .draws import parallel_task_draws

SHIFT_STDS = 16.0  # the shifted trial adds 16 standard deviations: E[x^2] - E[x]^2 in fp32 breaks, two passes do not
# The large-magnitude trial scales the task's inputs by 64, and more when their spread is below 1, to a standard
# deviation of at least 64: KernelBench's torch.rand inputs in [0, 1) then reach ~220, past exp's overflow at
# ~88, as standard-normal inputs times 64 do (a softmax without its max subtraction overflows on both).
LARGE_FACTOR = 64.0


def secret_seed() -> int:
    """A per-evaluation seed base, unknown to the candidate (recorded in the verdict afterwards)."""
    return secrets.randbits(30)


def make_inputs(task: Any, device: Any, seed: int, dist: str) -> list[Any]:
    """Seeded inputs drawn on the device; floating tensors re-drawn from another distribution if asked.

    `large`: the task's inputs scaled (signs kept) to a standard deviation of at least 64 (LARGE_FACTOR);
    `ties`: small multiples of 0.5 (many equal values: the tie rule of arg-reductions, as torch: first index);
    `shifted`: the task's inputs plus 16 of their standard deviations (a large mean next to a small spread).
    """
    import torch

    if dist in REDRAWN:
        likes = _all_redrawn(task)
        if likes is not None:  # nothing of the task's own draw would be kept: it is not made
            torch.manual_seed(seed)
            return [_redraw(like, device, dist) for like in likes]
    torch.manual_seed(seed)
    with torch.device(device), parallel_task_draws():
        inputs = validate_inputs(task.get_inputs(), task.path)
    out = []
    for k in range(len(inputs)):
        # One full-size input alive at a time: the task's tensor is let go before its replacement is drawn
        # (the same numbers as `randn_like` and friends: a like-shaped empty tensor filled in place).
        x, inputs[k] = inputs[k], None
        if isinstance(x, torch.Tensor):
            x = x.to(device)
            if x.is_floating_point() and dist != "task":
                if dist in REDRAWN:
                    like = torch.empty_like(x, device="meta")  # empty_like's strides, without the memory
                    del x
                    x = _redraw(like, device, dist)
                elif dist == "large":
                    x = x * (LARGE_FACTOR / min(1.0, _spread(x)))
                elif dist == "shifted":
                    x = x + SHIFT_STDS * _spread(x)
        out.append(x)
    return out


REDRAWN = ("normal", "signed_uniform", "ties")  # distributions that replace every floating input whole


def _redraw(like: Any, device: Any, dist: str) -> Any:
    """A tensor of `like`'s shape, strides and dtype on `device`, drawn from one of REDRAWN."""
    import torch

    x = torch.empty_strided(like.size(), like.stride(), dtype=like.dtype, device=device)
    kind = {"normal": "normal", "signed_uniform": "uniform"}.get(dist, "ties")
    if draws.large(x.numel() * x.element_size(), x.device):  # on every core (checker/draws.py)
        draws.fill_seeded(x, kind)
    elif kind == "normal":
        x.normal_()
    elif kind == "uniform":
        x.uniform_()
    else:
        x.random_(-4, 5)
    if dist == "signed_uniform":
        return x.mul_(2).sub_(1)
    return x if dist == "normal" else x.mul_(0.5)


def _all_redrawn(task: Any) -> list[Any] | None:
    """The task's inputs on the meta device (shapes, strides, dtypes, no memory, no numbers) when every one of
    them is a floating tensor, which a REDRAWN distribution replaces whole: the task's own draw would be made
    only to be thrown away, a full-size draw per input (4-5 s per GiB on the 2-core VM, single-threaded like
    every seeded CPU draw; issue 36). None where anything else is among them (integers, scalars, whose values
    the task's draw decides) or where the task cannot draw on the meta device: then the draw is made."""
    import torch

    try:
        with torch.device("meta"):
            inputs = validate_inputs(task.get_inputs(), task.path)
    except Exception:
        return None
    if all(isinstance(x, torch.Tensor) and x.is_floating_point() and x.device.type == "meta" for x in inputs):
        return [torch.empty_like(x, device="meta") for x in inputs]
    return None


def _spread(x: Any) -> float:
    """The tensor's standard deviation, or 1 where it has none (one element, constant, non-finite)."""
    std = float(x.float().std()) if x.numel() > 1 else 0.0
    return std if 0 < std < float("inf") else 1.0


def perturbation(inputs: list[Any], gen: Any, k: int = 4) -> list[tuple[int, Any]]:
    """For k scattered elements of every floating input: (input index, [to positions, from positions])."""
    import torch

    plan = []
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() > 1:
            plan.append((i, torch.randint(0, x.numel(), (2, k), generator=gen)))
    return plan


def apply_perturbation(inputs: list[Any], plan: list[tuple[int, Any]]) -> None:
    """Set each chosen element to the value at another position (values stay in the task's domain), in
    place: the tensor keeps its address and version counter, so only its content tells it changed."""
    import torch

    for i, pos in plan:
        x = inputs[i]
        pos = pos.to(x.device)
        d = x.data
        d[torch.unravel_index(pos[0], x.shape)] = d[torch.unravel_index(pos[1], x.shape)]


def clone_inputs(inputs: list[Any]) -> list[Any]:
    import torch

    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def changed_inputs(pristine: list[Any], used: list[Any]) -> list[int]:
    """Indices of tensor inputs whose content differs from the pristine copy (NaN-aware, bitwise)."""
    import torch

    changed = []
    for i, (a, b) in enumerate(zip(pristine, used, strict=True)):
        if isinstance(a, torch.Tensor):
            same = a.shape == b.shape and (torch.equal(a, b) or (a.is_floating_point() and bool(
                ((a == b) | (torch.isnan(a) & torch.isnan(b))).all())))
            if not same:
                changed.append(i)
    return changed


def other_init(init: list[Any], factor: float = 1.37) -> list[Any] | None:
    """The init arguments with every non-zero float scaled by `factor` (order and signs kept: lo < hi stays
    so); None when there is no such float. Integers are left alone: they are usually shapes."""
    changed = False

    def f(v: Any) -> Any:
        nonlocal changed
        if type(v) is float and v != 0.0 and v == v:
            changed = True
            return v * factor
        if isinstance(v, (list, tuple)):
            return type(v)(f(x) for x in v)
        return v

    new = [f(v) for v in init]
    return new if changed else None


def trial_plan(n: int, tier: str = "default") -> list[tuple[str, str, int]]:
    """(name, distribution, seed offset) of the main trials. bare: the five plain ones (task, normal, signed
    uniform, x64, another task seed); default: the first four plus ties and a shifted mean (a second task
    seed adds little to the others); thorough: all of them plus another seed of every distribution. `n` < 5
    keeps only the first n."""
    plain = [("task inputs, seed 0", "task", 0), ("normal", "normal", 1), ("signed uniform", "signed_uniform", 2),
             ("large magnitude", "large", 3), ("task inputs, seed 4", "task", 4)][: max(1, n)]
    if tier == "bare":
        return plain
    base = plain[:4] + [("ties (multiples of 0.5)", "ties", 5), ("shifted mean (+16 std)", "shifted", 6)]
    if tier == "thorough":
        base += plain[4:] + [("normal, seed 11", "normal", 11), ("signed uniform, seed 12", "signed_uniform", 12),
                             ("large magnitude, seed 13", "large", 13), ("ties, seed 15", "ties", 15),
                             ("shifted mean, seed 16", "shifted", 16)]
    return base
