"""Retrieve local strategies (level 2 of the HTG) for each direction of the step's portfolio, and learned notes.

htam: strategies of each chosen direction that fit the state (operator class, backend, what the reference
contains), minus those the current best already applies or that failed in this state in this task, by similarity
and outcome statistics; flat: the same store searched across all directions (no hierarchy), the direction taken
from the best hit; none or the no-strategies ablation: nothing.
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from htam_agent.context import RunContext
from htam_agent.nodes._memory_state import memory_state, task_memory
from htam_agent.run.resources import memory_for
from htam_agent.state import AgentState


def brief(hit: Any, backend: str) -> dict[str, Any]:
    """A strategy as the coder sees it: what it is, its record in this operator class (when it has one), its
    sketch and risks. The retrieval's similarity arithmetic stays out: it is not information for a coder."""
    from htam_agent.memory.policy import record_text

    s = hit.strategy
    summary = s.description.strip()
    record = record_text(hit.stats)
    if record:
        summary += f" Record in similar states: {record}."
    return {"id": s.id, "title": s.title, "summary": summary, "sketch": s.code_sketch.get(backend, ""),
            "risks": s.risks, "direction": s.direction, "source": s.source, "why": hit.reason}


def retrieve(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    mem = memory_for(ctx)
    update: dict[str, Any] = {"strategies": [], "notes": []}
    if mem is None:
        return update
    mstate = memory_state(state, ctx)
    choice = dict(state.get("direction") or {})
    direction = choice.get("id")
    exclude = task_memory(state, ctx).excluded_strategies(mstate.key)
    for h in state.get("history", []):  # a card learned from this run's own best is that best: not advice
        if h.get("learned"):
            exclude.setdefault(h["learned"], "learned from this task's own kernel")
    if ctx.memory_mode == "htam":
        slots = [dict(p) for p in choice.get("portfolio") or ([{"id": direction}] if direction else [])]
        found: dict[str, list[dict[str, Any]]] = {}
        for slot in slots:
            if ctx.use_strategies and slot["id"] not in found:
                hits = mem.retrieve_strategies(slot["id"], mstate, backend=ctx.backend, k=ctx.strategies_k,
                                               exclude=exclude)
                found[slot["id"]] = [brief(h, ctx.backend) for h in hits]
            slot["strategies"] = found.get(slot["id"], [])
        if slots:
            choice["portfolio"] = slots
            update["direction"] = choice
            update["strategies"] = slots[0]["strategies"]
    elif ctx.use_strategies:  # flat: one search over every direction
        hits = mem.retrieve_strategies(None, mstate, backend=ctx.backend, k=ctx.strategies_k, exclude=exclude)
        update["strategies"] = [brief(h, ctx.backend) for h in hits]
    notes = mem.retrieve_notes(mstate, direction if ctx.memory_mode == "htam" else None, k=3)
    update["notes"] = [n.text for n in notes]
    if ctx.memory_mode == "flat" and update["strategies"]:
        top = update["strategies"][0]
        update["direction"] = {"id": top["direction"], "reason": f"flat retrieval: best hit {top['id']}",
                               "score": None, "alternatives": [], "chosen_by": "flat"}
    get_stream_writer()({"event": "strategies", "step": state["step"],
                         "strategies": [s["id"] for s in update["strategies"]],
                         "portfolio": {p["id"]: [s["id"] for s in p.get("strategies", [])]
                                       for p in (update.get("direction") or {}).get("portfolio", [])},
                         "excluded": sorted(exclude)})
    return update
