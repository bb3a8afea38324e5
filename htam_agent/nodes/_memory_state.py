"""Translate between the graph's state and the memory's records (one place, so every node agrees)."""

from __future__ import annotations

from htam_agent.context import RunContext
from htam_agent.state import AgentState


def memory_state(state: AgentState, ctx: RunContext):  # -> htam_agent.memory.schema.MemoryState
    from htam_agent.memory.schema import MemoryState, StateKey

    a = state.get("analysis") or {}
    best = state.get("best") or {}
    speed = best.get("speedup_vs_eager")
    return MemoryState(
        key=StateKey(op_class=a.get("op_class", "other"), bottleneck=a.get("bottleneck", "unknown"),
                     status=a.get("status", "none"), backend=ctx.backend),
        description=a.get("description", ""),
        speedup=speed if speed and speed > 0 else None,
    )


def history_steps(state: AgentState):  # -> list[HistoryStep]
    """The run's path, oldest first. A step that did not improve the best counts as failed for the
    policy's "just failed" term, so a direction that stopped paying off is not taken again and again."""
    from htam_agent.memory.schema import HistoryStep

    return [HistoryStep(h["direction"], not h.get("improved")) for h in state.get("history", [])
            if h.get("direction")]
