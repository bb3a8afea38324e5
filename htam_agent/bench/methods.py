"""The methods a bench compares, as data: each is the same agent with another `RunContext`.

Equal budget means an equal number of *evaluations* per task (a repair is an evaluation). The agent evaluates
at most ``steps x candidates x (1 + max_repairs)`` candidates on a task, so for an evaluation budget B:

* iterative methods (htam, refine, flat-memory and the ablations): one candidate per step and the largest
  repair allowance r <= the base context's ``max_repairs`` (and <= B - 1) such that (1 + r) divides B; then
  ``steps = B / (1 + r)``. The cap ``steps x (1 + r)`` is exactly B. With B=6 and max_repairs=2 that is 2
  steps of up to 3 evaluations; with B=4, 2 steps of 2; with B=5, 5 steps without repairs.
* best-of-n: one step of B independent candidates, no repairs (cap B).
* one-shot: one candidate, no repairs (cap 1, whatever B is). It is the classic baseline and is not given
  the budget; the report says so and shows the evaluations each method actually used.

The cap is the same; the evaluations actually used can be lower (a step that needs no repair does not spend
its repairs, a run that reaches its target stops early). Every record keeps the count it used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from htam_agent.context import RunContext


class MethodError(ValueError):
    """An unknown method name or a budget it cannot use."""


@dataclass(frozen=True)
class Method:
    name: str
    description: str
    configure: Callable[[RunContext, int], RunContext]
    #: False for one-shot: it uses one evaluation whatever the budget is (said in the report)
    uses_budget: bool = True

    def context(self, base: RunContext, budget: int) -> RunContext:
        if budget < 1:
            raise MethodError(f"budget must be at least 1 evaluation per task (got {budget})")
        ctx = self.configure(base, budget)
        tags = tuple(t for t in base.tags if not t.startswith("method:")) + ("bench", f"method:{self.name}")
        # a bench run never waits for a person (an interactive run would stop at its first review)
        return ctx.with_(tags=tags, interactive=False)


def split_budget(budget: int, max_repairs: int) -> tuple[int, int]:
    """(steps, repairs) with steps x (1 + repairs) == budget and repairs as large as allowed."""
    if budget < 1:
        raise MethodError(f"budget must be at least 1 evaluation per task (got {budget})")
    for repairs in range(min(max_repairs, budget - 1), -1, -1):
        if budget % (1 + repairs) == 0:
            return budget // (1 + repairs), repairs
    raise AssertionError("unreachable: repairs=0 always divides")


def max_evaluations(ctx: RunContext) -> int:
    """The most evaluations the agent may spend on one task under this context."""
    return ctx.steps * ctx.candidates * (1 + ctx.max_repairs)


def _iterative(**switches) -> Callable[[RunContext, int], RunContext]:
    def configure(base: RunContext, budget: int) -> RunContext:
        steps, repairs = split_budget(budget, base.max_repairs)
        defaults = dict(memory_mode="htam", direction_policy="htam", use_strategies=True, use_transitions=True)
        defaults.update(switches)
        return base.with_(steps=steps, candidates=1, max_repairs=repairs, **defaults)

    return configure


def _one_shot(base: RunContext, budget: int) -> RunContext:
    return base.with_(steps=1, candidates=1, max_repairs=0, memory_mode="none", learn=False)


def _best_of_n(base: RunContext, budget: int) -> RunContext:
    return base.with_(steps=1, candidates=budget, max_repairs=0, memory_mode="none", learn=False)


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("htam", "HTAM: hierarchical memory of directions and strategies with transition experience",
           _iterative()),
    Method("one-shot", "one candidate, no feedback, no memory (uses 1 evaluation whatever the budget)",
           _one_shot, uses_budget=False),
    Method("refine", "iterative refinement with the evaluator's feedback, no memory",
           _iterative(memory_mode="none", learn=False)),
    Method("flat-memory", "retrieval over a flat list of past experiences (no hierarchy, no transitions)",
           _iterative(memory_mode="flat")),
    Method("best-of-n", "one step of budget-many independent candidates, no feedback, no memory",
           _best_of_n),
    Method("random-direction", "HTAM memory, but the direction is drawn at random",
           _iterative(direction_policy="random")),
    Method("htam-no-strategies", "ablation: HTAM without local strategies (directions and transitions only)",
           _iterative(use_strategies=False)),
    Method("htam-no-transitions", "ablation: HTAM without transition experience on the edges",
           _iterative(use_transitions=False)),
)}

DEFAULT_METHODS = ("htam", "one-shot", "refine", "flat-memory", "best-of-n")


def get_methods(names: list[str] | tuple[str, ...] | str) -> list[Method]:
    """Methods by name (a list or a comma-separated string), in the order given, without duplicates."""
    if isinstance(names, str):
        names = [n for n in names.split(",")]
    wanted = [n.strip() for n in names if n and n.strip()]
    if not wanted:
        raise MethodError(f"no method given; known: {', '.join(METHODS)}")
    unknown = [n for n in wanted if n not in METHODS]
    if unknown:
        raise MethodError(f"unknown method(s) {', '.join(map(repr, unknown))}; known: {', '.join(METHODS)}")
    return [METHODS[n] for n in dict.fromkeys(wanted)]


__all__ = ["DEFAULT_METHODS", "METHODS", "Method", "MethodError", "get_methods", "max_evaluations",
           "split_budget"]
