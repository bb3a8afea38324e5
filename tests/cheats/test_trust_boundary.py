"""The trust boundary (cheat pattern 19): what a candidate does in its own process cannot make a verdict.

Beyond the catalogue's "turned down" check, these look at what the attacks would leave behind: a daemon
that outlived its worker, files rewritten outside the sandbox, a verdict store holding a forged verdict.
Real checker and sandbox processes, real C++ builds (the catalogue's shared extension).
"""

from __future__ import annotations

import json
import os
import time

import pytest
from cheat_catalogue import HERE, NEUTRALISED, task_path
from sync_extension import source_of

from htam_agent.evaluation.common.containment import landlock
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions
from htam_agent.evaluation.parent.store import VerdictStore

pytestmark = pytest.mark.slow

TIMING_PLAN = {"target_s": 0.05, "min_reps": 3, "max_reps": 10}


def _daemons(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


def test_daemon_that_rewrites_verdicts_dies_and_forges_nothing(build_root, tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_VERDICT_DIR", str(tmp_path / "verdicts"))
    store = VerdictStore(str(tmp_path / "verdicts"))
    # A file the daemon would rewrite if it could write outside its sandbox.
    bait = tmp_path / "verdicts" / "bait.json"
    bait.parent.mkdir(parents=True, exist_ok=True)
    bait.write_text(json.dumps({"status": "incorrect"}))
    opts = EvalOptions(backend="cpp", baselines=(), timing=True, timing_plan=TIMING_PLAN, build_root=build_root)
    cand = Candidate(task_path=str(task_path("elementwise_leaky_relu")),
                     source=source_of(HERE / "cpp" / "p19_verdict_rewrite_daemon.py"))
    v = Evaluator(opts, store).evaluate(cand, use_store=False)
    assert v["status"] == "incorrect" and not v["accepted"], v["reason"]
    time.sleep(0.5)  # a daemon that survived would have rewritten the bait by now
    assert _daemons("htam-cheat-daemon-p19") == []
    if landlock.landlock_abi() >= 1:
        assert json.loads(bait.read_text()) == {"status": "incorrect"}
    stored = store.get(v["key"])
    assert stored is not None and stored["status"] == "incorrect"


def test_timings_forged_inside_the_sandbox_are_bounded_by_the_checkers_clock(build_root):
    opts = EvalOptions(backend="cpp", baselines=(), timing=True, timing_plan=TIMING_PLAN, build_root=build_root)
    cand = Candidate(task_path=str(task_path("elementwise_leaky_relu")),
                     source=source_of(HERE / "cpp" / "p19_forged_timer_instance.py"))
    v = Evaluator(opts, None).evaluate(cand, use_store=False)
    assert v["status"] == "rejected"
    assert [f["name"] for f in v["flags"] if f["rejects"]] == ["timing_below_wall_clock"]
    wall = v["wall_clock"]
    assert wall["reported_median_ms"] < 0.2 * wall["checker_median_ms"]  # the forgery: a tenth of ~20 ms


def test_honest_verdict_carries_the_boundary_facts(build_root):
    opts = EvalOptions(backend="cpp", baselines=(), timing=True, timing_plan=TIMING_PLAN, build_root=build_root)
    cand = Candidate(task_path=str(task_path("elementwise_leaky_relu")),
                     source=source_of(HERE / "honest" / "h07_thread_pool_joined.py"))
    v = Evaluator(opts, None).evaluate(cand, use_store=False)
    assert v["accepted"], v["reason"]
    assert isinstance(v["seed"], int)
    assert v["wall_clock"]["reported_median_ms"] <= v["wall_clock"]["checker_median_ms"]
    if landlock.landlock_abi() >= 1:
        assert v["sandbox"]["confinement"].startswith("landlock")


@pytest.mark.parametrize("cheat", NEUTRALISED, ids=lambda c: c.id)
def test_neutralised_cheats_are_honest_kernels_with_their_true_times(build_root, cheat):
    """What these patch (the statistics, for one) lives in the checker: the kernel is accepted, and the
    time reported agrees with the checker's clock."""
    opts = EvalOptions(backend="cpp", baselines=(), timing=True, timing_plan=TIMING_PLAN, build_root=build_root)
    v = Evaluator(opts, None).evaluate(Candidate(task_path=str(task_path(cheat.task)), source=cheat.source),
                                       use_store=False)
    assert v["accepted"], v["reason"]
    wall = v["wall_clock"]
    assert wall["reported_median_ms"] >= 0.7 * (wall["checker_median_ms"] - wall["overhead_allowance_ms"])
