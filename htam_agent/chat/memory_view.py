"""What the memory knows, as short text for a chat: directions for a class, transitions, learned strategies.

Reads through the memory's public methods only (no embedding model is loaded: nothing here retrieves).
"""

from __future__ import annotations

import math
from typing import Any

from htam_agent.context import RunContext

WHAT = ("directions", "transitions", "learned", "strategies", "all")


def _gain(mean: float | None) -> str:
    return "-" if mean is None else f"x{math.exp(mean):.2f}"


def query_memory(ctx: RunContext, what: str = "all", op_class: str | None = None, backend: str | None = None,
                 direction: str | None = None, limit: int = 8) -> dict[str, Any]:
    from htam_agent.memory.htam import HTAMemory
    from htam_agent.memory.schema import OP_CLASSES

    if what not in WHAT:
        raise ValueError(f"unknown table {what!r}; one of {', '.join(WHAT)}")
    if op_class is not None and op_class not in OP_CLASSES:
        raise ValueError(f"unknown operator class {op_class!r}; one of {', '.join(OP_CLASSES)}")
    with HTAMemory.open(ctx.memory_dir, ctx.chroma_url) as mem:
        if direction is not None and direction not in mem.directions:
            raise ValueError(f"unknown direction {direction!r}; one of {', '.join(mem.directions)}")
        out: dict[str, Any] = {"memory": str(mem.config.data_dir), "recorded_transitions": mem.transitions.count(),
                               "op_class": op_class, "backend": backend}
        if what in ("all", "directions"):
            taken: dict[str, list[float]] = {}
            for e in mem.edges(op_class=op_class, backend=backend):
                n, improved = taken.get(e.target, [0.0, 0.0])
                taken[e.target] = [n + e.stats.n, improved + e.stats.improved]
            rows = []
            for d in mem.catalog.directions:
                if direction and d.id != direction:
                    continue
                n, improved = taken.get(d.id, [0.0, 0.0])
                prior = d.prior(op_class) if op_class else max(d.op_class_priors.values())
                rows.append({"id": d.id, "name": d.name, "prior": round(prior, 2), "taken": n,
                             "improved": improved, "applies_when": d.applies_when})
            rows.sort(key=lambda r: (-r["prior"], r["id"]))
            out["directions"] = rows
        if what in ("all", "transitions"):
            out["transitions"] = [
                {"from": e.source, "to": e.target, "n": e.stats.n, "improved_rate": round(e.stats.success_rate, 2),
                 "mean_gain": _gain(e.stats.mean_gain), "recent_failures": list(e.recent_failures)[:2]}
                for e in mem.edges(op_class=op_class, backend=backend, direction=direction)[:limit]]
        if what in ("all", "learned"):
            cards = [c for c in mem.learned_cards()
                     if (not direction or c.direction == direction)
                     and (not backend or backend in c.applicability.backends)
                     and (not op_class or op_class in c.applicability.op_set())]
            out["learned"] = [{"id": c.id, "direction": c.direction, "title": c.title,
                               "plan": c.description.split(": ", 1)[-1][:200],
                               "from_task": c.evidence.get("task"), "speedup_after": c.evidence.get("speedup_after")}
                              for c in cards[:limit]]
        if what == "strategies":
            out["strategies"] = [
                {"id": r.strategy.id, "direction": r.strategy.direction, "title": r.strategy.title, "used": r.stats.n,
                 "improved_rate": round(r.stats.success_rate, 2) if r.stats.n else None}
                for r in mem.strategy_rows(op_class=op_class, backend=backend, direction=direction)[:limit]]
    return out
