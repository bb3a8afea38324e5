"""On the CPU a job's next checker starts only once the job's checker has given its verdict (parent/job.py, with
parent/pool.py's LaterSpare): started at the untimed tail, it and its two sandboxes sat beside the job's peak
memory (issue 36)."""

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


def test_a_cpu_job_starts_the_next_checker_after_its_verdict(started, build_root: str, monkeypatch) -> None:
    """A real job: the next checker is asked for only after the parent has read the verdict and the checker has
    ended (before, a `done` phase event started it while the checker was still finishing)."""
    from htam_agent.bundled_tasks import SUITE_DIR
    from htam_agent.evaluation.parent import job as parent_job
    from htam_agent.evaluation.parent.candidate import Candidate
    from htam_agent.evaluation.parent.evaluator import Evaluator
    from htam_agent.evaluation.parent.options import EvalOptions

    followed: list[bool] = []
    real_follow = parent_job._follow

    def follow(spare, *args, **kwargs):
        out = real_follow(spare, *args, **kwargs)
        followed.append(spare.proc.poll() is not None or out[0] is not None)
        return out

    monkeypatch.setattr(parent_job, "_follow", follow)
    seen_then: list[int] = []
    monkeypatch.setattr(pool, "_replenish", lambda n=pool.SPARES: seen_then.append(len(followed)) or started.append(n))
    ev = Evaluator(EvalOptions(backend="cpp", baselines=(), build_root=build_root), store=None)
    v = ev.evaluate(Candidate(task_path=str(SUITE_DIR / "elementwise_leaky_relu.py"),
                              source="class ModelNew:\n    pass\n"), use_store=False)
    assert v["status"] == "invalid_candidate", v.get("reason")  # turned down in the checker, phases announced
    assert started == [1] and followed == [True]
    assert seen_then == [1], "the next checker was started while the job's checker was still being followed"
