"""The methods a bench compares, as data: each is the same agent with another `RunContext`.

Equal budget means an equal number of *evaluations* per task (a repair is an evaluation), enforced by the
agent itself through ``RunContext.max_evaluations``: a run stops as soon as it has spent B, whatever else
its settings allow. For an evaluation budget B:

* iterative methods (htam, refine, flat-memory and the ablations): one candidate per step, up to B steps,
  repairs as the base context allows (``max_repairs``); repairs spend the same budget, so a method that fails
  more explores less.
* best-of-n: one step of B independent candidates, no repairs.
* one-shot: one candidate, no repairs (1 evaluation, whatever B is). It is the classic baseline and is not
  given the budget; the report says so and shows the evaluations each method actually used.

The evaluations actually used can be lower (a run that reaches its target speedup or the roofline stops
early). Every record keeps the count it used.
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


def max_evaluations(ctx: RunContext) -> int:
    """The most evaluations the agent may spend on one task under this context."""
    cap = ctx.steps * ctx.candidates * (1 + ctx.max_repairs)
    return min(cap, ctx.max_evaluations) if ctx.max_evaluations is not None else cap


def _iterative(**switches) -> Callable[[RunContext, int], RunContext]:
    def configure(base: RunContext, budget: int) -> RunContext:
        defaults = dict(memory_mode="htam", direction_policy="htam", use_strategies=True, use_transitions=True)
        defaults.update(switches)
        return base.with_(steps=budget, candidates=1, max_evaluations=budget, **defaults)

    return configure


def _one_shot(base: RunContext, budget: int) -> RunContext:
    return base.with_(steps=1, candidates=1, max_repairs=0, memory_mode="none", learn=False)


def _best_of_n(base: RunContext, budget: int) -> RunContext:
    return base.with_(steps=1, candidates=budget, max_repairs=0, max_evaluations=budget, memory_mode="none",
                      learn=False)


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


__all__ = ["DEFAULT_METHODS", "METHODS", "Method", "MethodError", "get_methods", "max_evaluations"]
