"""`htam bench` with extra methods that spend the same budget as several candidates per step (issue 17: the K
candidates of a step take K different directions), next to the built-in methods.

    HTAM_DEVICE_NAME="NVIDIA H200" python benchmarks/archive/bench_portfolio.py bundled --backend cuda --coder exemplar \
        --methods htam-k2,htam-k3,refine-k2 --budget 6 --seeds 0 --workers 1 --out DIR

htam-kK: the htam method with K candidates per step and budget/K steps (same evaluation cap); refine-kK: the
same without memory; flat-memory-kK: the same with the flat memory (one direction per step, from its best hit). Everything after the script name is passed to `htam bench`.
"""

from __future__ import annotations

import sys

from htam_agent.bench import methods as m
from htam_agent.context import RunContext


def _per_step(k: int, **switches: object):  # noqa: ANN202 - a Method.configure
    def configure(base: RunContext, budget: int) -> RunContext:
        defaults: dict[str, object] = dict(memory_mode="htam", direction_policy="htam", use_strategies=True,
                                           use_transitions=True)
        defaults.update(switches)
        return base.with_(steps=max(1, budget // k), candidates=k, max_evaluations=budget, **defaults)

    return configure


for k in (2, 3):
    m.METHODS[f"htam-k{k}"] = m.Method(f"htam-k{k}", f"htam with {k} candidates per step (a portfolio of "
                                       f"directions), budget/{k} steps", _per_step(k))
    m.METHODS[f"refine-k{k}"] = m.Method(f"refine-k{k}", f"refinement without memory, {k} candidates per step",
                                         _per_step(k, memory_mode="none", learn=False))
    m.METHODS[f"flat-memory-k{k}"] = m.Method(f"flat-memory-k{k}", f"flat memory, {k} candidates per step",
                                              _per_step(k, memory_mode="flat"))


if __name__ == "__main__":
    from htam_agent.cli import app

    app(["bench", *sys.argv[1:]])
