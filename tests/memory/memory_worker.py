"""Helper processes for the concurrency and crash tests (run with `python memory_worker.py ...`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from htam_agent.memory.schema import MemoryState, Outcome, StateKey
from htam_agent.memory.transitions import Event, TransitionStore

STRATS = ("ma_vectorized_loads", "pm_warp_per_row", "fr_online_softmax")


def _event(tag: str, i: int) -> Event:
    st = MemoryState(StateKey("normalization", "memory", "correct_slow", "cuda"), f"{tag} step {i}", 0.8)
    out = Outcome(True, "correct_slow", 0.8 * (1.0 + (i % 7) / 10)) if i % 3 else Outcome(False, "incorrect", None, "nan")
    return Event.from_step(st, "parallel_mapping", STRATS, out, prev_direction="memory_access", task_id=tag)


def record(db: str, n: int, tag: str, go_file: str) -> None:
    """Wait for the go signal, then record n events one transaction each, as the agent does."""
    store = TransitionStore(db)
    while not Path(go_file).exists():
        time.sleep(0.005)
    for i in range(n):
        assert store.append(_event(tag, i))
        time.sleep(0.001)  # an agent records between evaluations; without a pause one writer may starve the other
    store.close()


def record_forever(db: str, batch: int, tag: str) -> None:
    """Append batches of events (one transaction per batch) until killed."""
    store = TransitionStore(db)
    i = 0
    while True:
        store.append_many([_event(tag, i + j) for j in range(batch)])
        i += batch


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "record":
        record(args[0], int(args[1]), args[2], args[3])
    elif cmd == "record_forever":
        record_forever(args[0], int(args[1]), args[2])
    else:
        raise SystemExit(f"unknown command {cmd}")
