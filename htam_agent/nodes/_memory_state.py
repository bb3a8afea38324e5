"""Translate between the graph's state and the memory's records (one place, so every node agrees)."""

from __future__ import annotations

from typing import Any

from htam_agent.context import RunContext
from htam_agent.state import AgentState

#: a best candidate at this fraction of the roofline floor or more is "near_roofline" for the memory
NEAR_ROOFLINE = 0.7


def roofline_fraction(verdict: dict[str, Any]) -> float | None:
    return (verdict.get("roofline") or {}).get("fraction")


# NVRTC and Triton compile at the first launch, so the evaluator reports their compiler errors as errors of
# the first call; for the memory and the prompts they are compile errors all the same.
_JIT_COMPILE_ERRORS = ("Kernel compilation failed", "CompilationError", "nvrtc: error", "NVRTC_ERROR")


def failed_to_compile(verdict: dict[str, Any]) -> bool:
    if verdict.get("status") in ("compile_error", "invalid_candidate"):
        return True
    text = f"{verdict.get('reason') or ''} {verdict.get('compiler_message') or ''}"
    return verdict.get("status") == "runtime_error" and any(m in text for m in _JIT_COMPILE_ERRORS)


def memory_status(verdict: dict[str, Any]) -> str:
    if verdict.get("accepted"):
        frac = roofline_fraction(verdict)
        return "near_roofline" if frac is not None and frac >= NEAR_ROOFLINE else "correct_slow"
    return "compile_error" if failed_to_compile(verdict) else "incorrect"


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
