"""Small builders shared by the memory tests."""

from __future__ import annotations

from htam_agent.memory.schema import MemoryState, Outcome, StateKey


def state(op: str = "matmul", bn: str = "compute", status: str = "correct_slow", backend: str = "cuda",
          text: str = "", speedup: float | None = 0.5) -> MemoryState:
    return MemoryState(StateKey(op, bn, status, backend), text, speedup)


def gain(speedup: float, before: float = 0.5) -> Outcome:
    """An accepted candidate at speedup_vs_eager = before * speedup (log gain = log(speedup))."""
    return Outcome(True, "correct_slow", before * speedup)


def fail(reason: str = "wrong result on input set 2") -> Outcome:
    return Outcome(False, "incorrect", None, reason)
