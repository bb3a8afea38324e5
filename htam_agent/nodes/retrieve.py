"""Retrieve local strategies (level 2 of the HTG) for the chosen direction, and learned notes.

htam: strategies of the direction, by similarity to the state and their outcome statistics; flat: the same
store searched across all directions (no hierarchy), the direction taken from the best hit; none or the
no-strategies ablation: nothing.
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from htam_agent.context import RunContext
from htam_agent.nodes._memory_state import memory_state
from htam_agent.resources import memory_for
from htam_agent.state import AgentState


def brief(hit: Any, backend: str) -> dict[str, Any]:
    s = hit.strategy
    return {"id": s.id, "title": s.title, "summary": f"{s.description} ({hit.reason})".strip(),
            "sketch": s.code_sketch.get(backend, ""), "risks": s.risks, "direction": s.direction}


def retrieve(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    mem = memory_for(ctx)
    update: dict[str, Any] = {"strategies": [], "notes": []}
    if mem is None:
        return update
    mstate = memory_state(state, ctx)
    direction = (state.get("direction") or {}).get("id")
    if ctx.use_strategies:
        hits = mem.retrieve_strategies(direction if ctx.memory_mode == "htam" else None, mstate,
                                       backend=ctx.backend, k=ctx.strategies_k)
        update["strategies"] = [brief(h, ctx.backend) for h in hits]
    notes = mem.retrieve_notes(mstate, direction if ctx.memory_mode == "htam" else None, k=3)
    update["notes"] = [n.text for n in notes]
    if ctx.memory_mode == "flat" and update["strategies"]:
        top = update["strategies"][0]
        update["direction"] = {"id": top["direction"], "reason": f"flat retrieval: best hit {top['id']}",
                               "score": None, "alternatives": [], "chosen_by": "flat"}
    get_stream_writer()({"event": "strategies", "step": state.get("step", 0),
                         "strategies": [s["id"] for s in update["strategies"]]})
    return update
