"""A candidate's own memory is capped from the task's footprint (issue 36): one that holds far more than its share
is turned down as `out_of_memory` with the cap in its reason, and the honest kernel it wraps is still accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_agent.bundled_tasks import CANDIDATES_DIR, SUITE_DIR
from htam_agent.evaluation.common.containment import memory_cap
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions

TASK = SUITE_DIR / "elementwise_leaky_relu.py"
HOARD = Path(__file__).parent / "memory_tasks" / "hoard_leaky_relu.py"
HONEST = CANDIDATES_DIR / "elementwise_leaky_relu" / "cpp_omp.py"


def test_the_allowance_follows_the_footprint_and_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTAM_SANDBOX_MEMORY_MB", raising=False)
    assert memory_cap.allowance(1 << 30) == 4 * (1 << 30) + memory_cap.HEADROOM
    assert memory_cap.allowance(None) is None
    monkeypatch.setenv("HTAM_SANDBOX_MEMORY_MB", "512")
    assert memory_cap.allowance(1 << 30) == 512 << 20
    monkeypatch.setenv("HTAM_SANDBOX_MEMORY_MB", "0")
    assert memory_cap.allowance(1 << 30) is None
    monkeypatch.setenv("HTAM_SANDBOX_MEMORY_MB", "lots")
    with pytest.raises(ValueError, match="HTAM_SANDBOX_MEMORY_MB"):
        memory_cap.allowance(1 << 30)


@pytest.mark.slow
def test_a_hoarding_candidate_is_turned_down_and_its_honest_kernel_accepted(build_root: str) -> None:
    ev = Evaluator(EvalOptions(backend="cpp", baselines=(), timing=True, build_root=build_root,
                               timing_plan={"target_s": 0.05, "min_reps": 3, "max_reps": 10}), store=None)
    hoard = ev.evaluate(Candidate(task_path=str(TASK), source=HOARD.read_text()), use_store=False)
    assert hoard["status"] == "out_of_memory", hoard.get("reason")
    assert "may hold" in hoard["reason"] and "footprint" in hoard["reason"], hoard["reason"]
    assert hoard["memory_cap"]["allowed_bytes"] < 6 << 30
    honest = ev.evaluate(Candidate(task_path=str(TASK), source=HONEST.read_text()), use_store=False)
    assert honest["status"] == "accepted", honest.get("reason")
    assert honest["memory_cap"]["how"], honest["memory_cap"]
