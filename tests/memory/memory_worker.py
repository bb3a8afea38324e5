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


def record_shared(data_dir: str, url: str, prefix: str, n: int, tag: str, go_file: str) -> None:
    """One "host": its own memory folder, the shared server; records n steps through HTAMemory as the agent does,
    and one learned strategy."""
    from htam_agent.memory.config import MemoryConfig
    from htam_agent.memory.htam import HTAMemory
    from htam_agent.memory.schema import Strategy

    mem = HTAMemory(MemoryConfig(data_dir, chroma_url=url, collection_prefix=prefix))
    while not Path(go_file).exists():
        time.sleep(0.005)
    for i in range(n):
        ev = _event(tag, i)
        out = Outcome(ev.accepted, ev.status_after, ev.speedup_after, ev.failed_reason)
        st = MemoryState(ev.key, ev.state_text, ev.speedup_before)
        mem.record(st, "parallel_mapping", STRATS, out, history=["memory_access"], task_id=tag, run_id=tag,
                   uid=f"{tag}:{i}")
    base = mem.catalog.strategies[0]
    mem.add_strategies([Strategy.model_validate({**base.model_dump(), "id": f"learned_{tag}",
                                                 "title": f"learned on {tag}"})])
    mem.close()


def class_events(worker: int) -> list[tuple]:
    """24 steps of one worker, classes interleaved: elementwise (launch_overhead doubles the speed, parallel_mapping
    is rejected), normalization (fusion_restructuring doubles, parallel_mapping rejected), pooling (data_reuse
    x1.3). Items: (state, direction, strategies, outcome, history, uid)."""
    lessons = {"elementwise": ("launch_overhead", 2.0), "normalization": ("fusion_restructuring", 2.0),
               "pooling": ("data_reuse", 1.3)}
    out = []
    for i in range(24):
        op = ("elementwise", "normalization", "pooling")[i % 3]
        st = MemoryState(StateKey(op, "memory", "correct_slow", "cuda"), f"{op} task w{worker} {i}", 1.0)
        good, g = lessons[op]
        if (i // 3) % 2 == 0:
            out.append((st, good, [], Outcome(True, "correct_slow", g), ["memory_access"], f"w{worker}:{i}"))
        else:
            out.append((st, "parallel_mapping", [], Outcome(False, "incorrect", None, "wrong result"),
                        ["memory_access"], f"w{worker}:{i}"))
    return out


def record_classes(data_dir: str, worker: int, go_file: str) -> None:
    """One agent process on a shared memory folder: its class_events, one record call per step."""
    from htam_agent.memory.config import MemoryConfig
    from htam_agent.memory.htam import HTAMemory

    mem = HTAMemory(MemoryConfig(data_dir))
    while not Path(go_file).exists():
        time.sleep(0.005)
    for st, d, strategies, outcome, hist, uid in class_events(worker):
        mem.record(st, d, strategies, outcome, history=hist, uid=uid, task_id=f"w{worker}")
        mem.select_directions(st, hist)  # readers fold other writers' rows while they write
    mem.close()


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "record":
        record(args[0], int(args[1]), args[2], args[3])
    elif cmd == "record_shared":
        record_shared(args[0], args[1], args[2], int(args[3]), args[4], args[5])
    elif cmd == "record_classes":
        record_classes(args[0], int(args[1]), args[2])
    elif cmd == "record_forever":
        record_forever(args[0], int(args[1]), args[2])
    else:
        raise SystemExit(f"unknown command {cmd}")
