"""On the CPU a job's next checker starts only when the job's timed phases are over (parent/pool.py, LaterSpare)."""

from __future__ import annotations

import pytest

from htam_agent.evaluation.parent import pool


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    monkeypatch.setattr(pool, "_replenish", lambda n=pool.SPARES: calls.append(n))
    return calls


def test_a_timed_job_starts_its_successor_at_the_untimed_tail(started):
    later = pool.LaterSpare(armed=True, timed=True)
    for phase in ("start", "compile", "first_call", "verify", "check_ops", "time", "roofline"):
        later.phase(phase)
    assert started == []  # nothing imports torch beside a timed phase
    later.phase("sabotage")
    later.phase("verify_other_shape")
    later.finish()
    assert started == [1]  # once


def test_a_job_that_stops_early_starts_it_at_its_end(started):
    later = pool.LaterSpare(armed=True, timed=True)
    later.phase("compile")
    later.finish()
    assert started == [1]


def test_an_untimed_job_starts_it_at_once_and_a_disarmed_one_never(started):
    later = pool.LaterSpare(armed=True, timed=False)
    later.phase("compile")
    assert started == [1]
    off = pool.LaterSpare(armed=False, timed=True)
    off.phase("sabotage")
    off.finish()
    assert started == [1]


def test_every_tail_phase_is_one_the_checker_enters_after_timing():
    import inspect

    from htam_agent.evaluation.checker import phases

    order = [p.__name__ for p in phases.PHASES]
    assert order.index("phase_sabotage") > order.index("phase_roofline") > order.index("phase_timing")
    assert order[order.index("phase_sabotage"):] == ["phase_sabotage", "phase_other_init", "phase_other_shape"]
    assert {"sabotage", "verify_other_init", "verify_other_shape", "done"} == set(pool.UNTIMED_TAIL)
    for fn, name in ((phases.phase_sabotage, "sabotage"), (phases.phase_other_init, "verify_other_init"),
                     (phases.phase_other_shape, "verify_other_shape")):
        assert f'run.enter("{name}")' in inspect.getsource(fn)
