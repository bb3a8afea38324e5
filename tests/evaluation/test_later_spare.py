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


def test_a_disarmed_spare_never_starts_and_an_armed_one_once(started):
    off = pool.LaterSpare(armed=False)
    off.finish()
    assert started == []
    later = pool.LaterSpare(armed=True)
    later.finish()
    later.finish()
    assert started == [1]


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
