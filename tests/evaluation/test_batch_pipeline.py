"""A batch's builds and verdicts overlap on a GPU host, and not on the CPU (Evaluator.evaluate_batch)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions


def _timeline(backend: str) -> tuple[list[tuple[str, int, float]], list[tuple[str, int, int]]]:
    ev = Evaluator(EvalOptions(backend=backend, baselines=()), store=None, device="dev")
    events: list[tuple[str, int, float]] = []
    lock = threading.Lock()

    def compile_only(c):
        time.sleep(0.05 + 0.25 * c.i)  # the later candidates build longer
        with lock:
            events.append(("built", c.i, time.perf_counter()))
        return {"status": "accepted", "reason": "compiled"}

    def evaluate(c):
        with lock:
            events.append(("judged", c.i, time.perf_counter()))
        return {"status": "accepted", "accepted": True, "i": c.i}

    ev.compile_only, ev.evaluate = compile_only, evaluate
    seen: list[tuple[str, int, int]] = []
    out = ev.evaluate_batch([SimpleNamespace(i=i) for i in range(4)], parallel_compile=4,
                            progress=lambda phase, i, n, v: seen.append((phase, i, n)))
    assert [v["i"] for v in out] == [0, 1, 2, 3]  # verdicts in the batch's order
    assert sorted(p for p in seen if p[0] == "compile") == [("compile", i, 4) for i in range(1, 5)]
    assert [p for p in seen if p[0] == "evaluate"] == [("evaluate", i, 4) for i in range(1, 5)]
    return events, seen


def _when(events, kind: str, i: int) -> float:
    return next(t for k, j, t in events if k == kind and j == i)


def test_on_a_gpu_host_the_first_verdict_does_not_wait_for_the_last_build():
    events, _ = _timeline("cuda")
    assert _when(events, "judged", 0) < _when(events, "built", 3)
    for i in range(4):  # but never before its own build
        assert _when(events, "built", i) <= _when(events, "judged", i)


def test_on_the_cpu_every_build_finishes_before_the_first_timed_verdict():
    events, _ = _timeline("cpp")
    assert max(_when(events, "built", i) for i in range(4)) <= _when(events, "judged", 0)


def test_a_build_that_raises_stops_the_batch_and_no_thread_is_left(monkeypatch: pytest.MonkeyPatch):
    ev = Evaluator(EvalOptions(backend="cuda", baselines=()), store=None, device="dev")

    def compile_only(c):
        if c.i == 0:
            raise RuntimeError("the builder crashed")
        time.sleep(0.2)
        return {}

    ev.compile_only = compile_only
    ev.evaluate = lambda c: {"i": c.i}
    before = threading.active_count()
    with pytest.raises(RuntimeError, match="the builder crashed"):
        ev.evaluate_batch([SimpleNamespace(i=i) for i in range(3)], parallel_compile=3)
    assert threading.active_count() == before
