"""Translate between the graph's state and the memory's records (one place, so every node agrees); a verdict's
memory status is `evaluation.readout.Readout`'s (the one reader of verdicts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from htam_agent.context import RunContext
from htam_agent.evaluation.parent.readout import Readout
from htam_agent.state import AgentState, measured_by_step

if TYPE_CHECKING:  # the schema imports pydantic: loaded when a node needs it, not with the graph
    from htam_agent.memory.schema import HistoryStep, MemoryState


def memory_state(state: AgentState, ctx: RunContext) -> MemoryState:
    from htam_agent.memory.schema import OP_CLASSES, MemoryState, StateKey

    a = state.get("analysis") or {}
    best = state.get("best") or {}
    speed = best.get("speedup_vs_eager")
    return MemoryState(
        key=StateKey(op_class=a.get("op_class", "other"), bottleneck=a.get("bottleneck", "unknown"),
                     status=a.get("status", "none"), backend=ctx.backend),
        description=a.get("description", ""),
        speedup=speed if speed and speed > 0 else None,
        features=frozenset(f for f in a.get("features") or () if f in OP_CLASSES),
        shape_facts=MemoryState.facts_of(a.get("shapes")),
        roofline=best.get("roofline_fraction") if best else None,
    )


def state_key_list(state: AgentState) -> list[str]:
    """The step's memory state key without the backend (a run has one backend), for the step record."""
    a = state.get("analysis") or {}
    return [a.get("op_class", "other"), a.get("bottleneck", "unknown"), a.get("status", "none")]


def task_memory(state: AgentState, ctx: RunContext):  # -> htam_agent.memory.schema.TaskMemory
    """What this task did so far, one Attempt per candidate (its last repair) of every finished step: the
    direction and strategies it applied (declared, else assigned), the direction it was asked to take, whether it
    beat the best before its step (a candidate of a step with no best before it is a baseline instead), whether
    it became the best, its speedups, and the state key the step started from."""
    from htam_agent.memory.schema import Attempt, StateKey, TaskMemory

    keys = {h.get("step"): h.get("state_key") for h in state.get("history", [])}
    steps = {h.get("step"): h.get("direction") for h in state.get("history", [])}
    attempts = []
    best: float | None = None
    for step, last in measured_by_step(state).items():
        raw = keys.get(step)
        key = StateKey(raw[0], raw[1], raw[2], ctx.backend) if raw and len(raw) == 3 else None
        accepted = [c for c in last if Readout(c.get("verdict")).accepted]
        top = max(accepted, key=lambda c: Readout(c.get("verdict")).speedup_vs_eager or 0.0, default=None)
        top_speed = Readout(top.get("verdict")).speedup_vs_eager if top else None
        new_best = top is not None and (best is None or (top_speed is not None and top_speed > best))
        for c in last:
            read = Readout(c.get("verdict"))
            speed = read.speedup_vs_eager
            ok = read.accepted
            baseline = ok and best is None  # no best before this step: it sets one, it improves nothing
            improved = ok and best is not None and speed is not None and speed > best
            direction = c.get("direction") or steps.get(step)
            if not direction:
                continue
            attempts.append(Attempt(direction=direction, strategies=tuple(c.get("strategy_ids") or ()),
                                    improved=improved, accepted=ok, key=key, step=step,
                                    became_best=new_best and c is top, asked=c.get("assigned_direction"),
                                    baseline=baseline, speedup=speed if ok and speed else None,
                                    vs_best=speed / best if ok and speed and best else None))
        if new_best:
            best = top_speed if top_speed is not None else best
    return TaskMemory(tuple(attempts))


def history_steps(state: AgentState) -> list[HistoryStep]:
    """The run's path, oldest first. A step that did not improve the best counts as failed for the
    policy's "just failed" term, so a direction that stopped paying off is not taken again and again."""
    from htam_agent.memory.schema import HistoryStep

    return [HistoryStep(h["direction"], not h.get("improved")) for h in state.get("history", [])
            if h.get("direction")]
