"""Paired timing: the eager baseline timed beside the candidate, one estimator for both, the candidate frozen.

The estimator is pure (judge.settle_pair); freezing and the interleaved timing run on real sandbox
processes (tests/evaluation/sandbox_harness.py), with a plain Python candidate and the task's reference.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from sandbox_harness import python_candidate_run

from htam_agent.evaluation.checker import judge, timing
from htam_agent.evaluation.checker import phases as checker
from htam_agent.evaluation.checker.sandbox_client import SandboxClient
from htam_agent.evaluation.checker.state import Run
from htam_agent.evaluation.checker.timed_calls import paired_reps, reps_for, time_paired
from htam_agent.evaluation.common.containment import process_tree
from htam_agent.evaluation.common.verdict import VerdictBuilder
from htam_agent.evaluation.parent.options import EvalOptions
from htam_agent.evaluation.tasks import load_task

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "htam_agent/bundled_tasks/suite/elementwise_leaky_relu.py"


def _clock(walls: list[float], reported: list[float]) -> judge.WallClock:
    return judge.WallClock(calibration=[1.0] * 25, walls=walls, reported=reported)


def _stats(median: float) -> dict:
    return {"median_ms": median, "in_process_median_ms": median, "spread_pct": 5.0}


def test_paired_sides_share_the_plans_budget_of_calls():
    """Pairing must not double the timed calls of a verdict: each side gets half of what one slot alone would
    (rounded up), never fewer than the plan's minimum."""
    plan = timing.TimingPlan(target_s=0.5, min_reps=10, max_reps=200)
    assert reps_for(plan, 0.1) == 200 and paired_reps(plan, 0.1) == 100
    assert reps_for(plan, 9.0) == 55 and paired_reps(plan, 9.0) == 28
    assert reps_for(plan, 80.0) == 10 and paired_reps(plan, 80.0) == 10  # the minimum holds per side


def test_honest_pair_keeps_both_in_process_figures():
    # Same overhead beyond the call on both sides (1 ms, a little noise): neither figure moves.
    ref = _clock([3.0 + 0.01 * (i % 3) for i in range(40)], [2.0] * 40)
    cand = _clock([3.02 + 0.01 * (i % 3) for i in range(40)], [2.0] * 40)
    c, r = judge.settle_pair(_stats(2.0), cand, _stats(2.0), ref, "cpu")
    assert (c["clock"], r["clock"]) == ("in_process", "in_process")
    assert c["median_ms"] == 2.0 and r["median_ms"] == 2.0


def test_a_clock_that_hides_time_is_corrected_by_what_it_hid():
    # The candidate reports 1 ms for calls the checker saw take as long as the reference's 2 ms ones.
    ref = _clock([3.0] * 40, [2.0] * 40)
    cand = _clock([3.0] * 40, [1.0] * 40)
    c, r = judge.settle_pair(_stats(1.0), cand, _stats(2.0), ref, "cpu")
    assert c["clock"] == "checker" and r["clock"] == "in_process"
    assert c["median_ms"] == pytest.approx(2.0, abs=1e-6)
    assert c["beyond_call_excess_ms"] == pytest.approx(1.0)


def test_a_small_hidden_share_within_the_slack_stands():
    # 5% hidden, under the CPU's 10% slack: believed (a forged clock gains at most the slack).
    ref = _clock([3.0] * 40, [2.0] * 40)
    cand = _clock([3.0] * 40, [1.9] * 40)
    c, _ = judge.settle_pair(_stats(1.9), cand, _stats(2.0), ref, "cpu")
    assert c["clock"] == "in_process" and c["median_ms"] == 1.9
    c, _ = judge.settle_pair(_stats(1.9), cand, _stats(2.0), ref, "cuda")  # 5% on a GPU: at the edge
    assert c["median_ms"] == 1.9
    cand = _clock([3.0] * 40, [1.8] * 40)
    c, _ = judge.settle_pair(_stats(1.8), cand, _stats(2.0), ref, "cuda")
    assert c["clock"] == "checker" and c["median_ms"] == pytest.approx(2.0)


def test_the_paired_eager_figure_stands_and_the_separate_one_is_kept_beside_it():
    v = VerdictBuilder("relu", "cpp")
    v.set_compile(compiled=True, seconds=0.1)
    v.set_correct(True)
    v.set_status("accepted")
    v.set_timing("candidate", {"median_ms": 1.0})
    v.set_timing("eager", {"median_ms": 2.0, "paired": True})
    out = v.finalize_job({"baseline": {"status": "accepted", "timing": {"eager": {"median_ms": 3.0},
                                                                        "compile": {"median_ms": 4.0}}}})
    assert out["timing"]["eager"]["median_ms"] == 2.0 and out["timing"]["eager"]["separate_median_ms"] == 3.0
    assert out["speedup_vs_eager"] == 2.0 and out["speedup_vs_compile"] == 4.0


def test_pairing_is_on_for_the_cpu_and_off_on_a_gpu_by_default():
    assert EvalOptions(backend="cpp").pairs_eager()
    assert not EvalOptions(backend="cuda").pairs_eager()
    assert EvalOptions(backend="cuda", paired_eager=True).pairs_eager()
    assert not EvalOptions(backend="cpp", baselines=("compile",)).pairs_eager()  # nothing to pair with
    assert not EvalOptions(backend="cpp", timing=False).pairs_eager()
    assert EvalOptions(backend="cpp").key_fields()["paired_eager"] is True
    assert "paired_eager" not in EvalOptions(backend="cpp", paired_eager=False).key_fields()


SPINNER = '''
import os, subprocess, sys, time
import torch

PATH = os.path.join(os.environ["HOME"], "beats.txt")
# A process of the candidate's that keeps working between its calls (it could burn the cores the
# reference is timed on): it writes a beat every 5 ms.
_child = subprocess.Popen([sys.executable, "-c",
    "import time\\nwhile True:\\n    open(%r, 'a').write('x')\\n    time.sleep(0.005)" % PATH])


class ModelNew(torch.nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.leaky_relu(x, 0.01)
'''


def _beats(run: Run) -> int:
    try:
        return (run.sb.scratch / "beats.txt").stat().st_size
    except OSError:
        return 0


@pytest.mark.parametrize("by", ["cgroup", "signals"])
def test_paused_stops_every_process_of_the_sandbox_and_resumes_them(tmp_path: Path, by: str):
    task = load_task(TASK, size="small")
    with python_candidate_run(SPINNER, task, tmp_path) as run:
        group = run.sb.cgroup
        if by == "cgroup" and group is None:
            pytest.skip("no writable cgroup v2 tree here: the signals path is the one in use")
        if by == "signals":
            run.sb.cgroup = None  # as where cgroup v2 is not writable (restored for the kill)
        end = time.monotonic() + 20
        while _beats(run) < 3 and time.monotonic() < end:
            time.sleep(0.02)
        assert _beats(run) >= 3, "the candidate's child never started"
        keep = set(process_tree.children()) - {run.sb.proc.pid}  # this test's other children stay running
        with run.sb.paused(keep):
            time.sleep(0.05)
            before = _beats(run)
            time.sleep(0.3)
            assert _beats(run) == before, "a process of the sandbox ran while it was paused"
        time.sleep(0.3)
        assert _beats(run) > before, "the sandbox's processes were not resumed"
        run.sb.cgroup = group


def test_paired_timing_interleaves_and_freezes(tmp_path: Path):
    """The reference in a second real sandbox, timed beside a candidate that computes the same thing
    (and leaves a busy child running): the same number of calls each, the reference's figure in-process,
    the two within a sane factor."""
    task = load_task(TASK, size="small")
    with python_candidate_run(SPINNER, task, tmp_path) as run:
        run.calibration = []
        ref_sb = SandboxClient(env=dict(os.environ))
        try:
            run.ref_sandbox = ref_sb
            run.job.update(task_source=TASK.read_text(), task_path=str(TASK), task_name=task.name,
                           backend="cpp", timing=True, baselines=["eager"], paired_eager=True)
            ref_run = checker.reference_run(run)
            assert ref_run is not None, run.verdict.get("warnings")
            # the paired estimator compares the two sides' requests with each other: no no-op requests
            assert ref_run.calibration == [], "the reference's sandbox spent requests on a calibration"
            plan = timing.TimingPlan(target_s=0.2, min_reps=16, max_reps=32, warmup_s=0.02)
            (c, problems, c_wall), (r, _, r_wall) = time_paired(run, ref_run, plan, recheck=True)
        finally:
            ref_sb.kill()
            ref_sb.cleanup()
    assert not problems, problems
    assert c["reps"] == r["reps"] >= 16
    assert len(c_wall.walls) == len(r_wall.walls) == c["reps"]
    assert r["clock"] == "in_process" and "beyond_call_excess_ms" in c
    assert 0.2 < c["median_ms"] / r["median_ms"] < 5, (c["median_ms"], r["median_ms"])



@pytest.mark.slow
def test_a_reference_that_fails_in_its_own_sandbox_leaves_the_candidates_evaluation_whole(tmp_path: Path,
                                                                                         build_root: str):
    """The reference's sandbox fails to load it (here: the task's Model writes beside the task file, which the
    checker may and a sandbox may not): the verdict warns and keeps the separate baseline, and the candidate's
    own sandbox, a sibling of the failed one, is evaluated to the end (a kill of the failed one used to take
    every process of the checker with it)."""
    from htam_agent.bundled_tasks import candidate_files
    from htam_agent.evaluation.parent.candidate import Candidate
    from htam_agent.evaluation.parent.evaluator import Evaluator

    source = TASK.read_text().replace(
        '        self.negative_slope = negative_slope\n',
        '        self.negative_slope = negative_slope\n'
        '        import os\n'
        '        open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "touched"), "a").close()\n')
    assert "touched" in source
    task = tmp_path / "leaky_relu_touching.py"
    task.write_text(source)
    cand = next(p for p in candidate_files("elementwise_leaky_relu", "cpp") if p.stem == "cpp_naive")
    opts = EvalOptions(backend="cpp", baselines=("eager",), build_root=build_root, paired_eager=True,
                       timing_plan={"target_s": 0.05, "min_reps": 3, "max_reps": 10})
    v = Evaluator(opts, None).evaluate(Candidate(task_path=str(task), source=cand.read_text()), use_store=False)
    assert v["status"] == "accepted", v["reason"]
    assert any("could not be timed beside the candidate" in w for w in v.get("warnings", [])), v.get("warnings")
    assert (v["timing"].get("candidate") or {}).get("median_ms"), v["timing"]
    assert not v.get("leftover_processes")


def test_a_paired_timing_is_re_taken_for_the_ratios_error_not_either_sides_spread():
    """Paired, the speedup rests on the ratio of two medians taken at the same moments: its standard error
    decides a second timing. Eager's usual 15-20% spread on the 2-core VM over 50 calls a side is a ratio
    error of about 2-3%, not worth timing again; a spread of 40% is."""
    calm, usual, wild = ({"spread_pct": p, "reps": 50} for p in (8.0, 18.0, 40.0))
    assert judge.pair_error_pct(calm, calm) == pytest.approx(0.93 * 8 / 50 ** 0.5 * 2 ** 0.5)
    assert not judge.unsteady_pair(calm, usual) and not judge.unsteady_pair(usual, calm)
    assert judge.unsteady_pair(calm, wild) and judge.unsteady_pair(wild, calm)
    assert judge.unsteady_pair(calm, {"spread_pct": 8.0, "reps": 3})  # three calls say little
    assert judge.unsteady_pair(calm, {"spread_pct": 8.0})  # no count: not believed steady
    v = VerdictBuilder("relu", "cpp")
    judge.flag_unsteady_pair(v, calm, wild)
    flag = next(f for f in v.get("flags") if f["name"] == "timing_unreliable")
    assert "standard error of 5.4%" in flag["reason"] and not flag["rejects"] and not v.rejected


def _scripted_checker(jobs: list[dict], pair: bool):
    """A checker without a process, as the real one builds its verdicts: a paired evaluate job times eager beside
    the candidate, or (pair=False) warns that it could not; a baseline job times what its `baselines` name."""
    from htam_agent.evaluation.common.verdict import with_envelope

    def run_job(job: dict, options: EvalOptions) -> dict:
        job = json.loads(json.dumps(job))
        jobs.append(job)
        v = VerdictBuilder(job["task_name"], job["backend"])
        v.set_compile(compiled=True, seconds=0.1)
        v.set_correct(True)
        for note in job.get("notes") or []:
            v.warn(note)
        if job["mode"] == "baseline":
            for name, ms in (("eager", 3.0), ("compile", 4.0)):
                if name in job["baselines"]:
                    v.set_timing(name, {"median_ms": ms})
            v.set_status("accepted", "baseline timings")
        else:
            v.set_status("accepted")
            v.set_timing("candidate", {"median_ms": 1.0})
            if job["paired_eager"] and pair:
                v.set_timing("eager", {"median_ms": 2.0, "paired": True})
            elif job["paired_eager"]:
                v.warn("the eager baseline could not be timed beside the candidate (a reason); it is measured on "
                       "its own")
        return with_envelope(v.finalize_job(job), wall_seconds=1.0)
    return run_job


@pytest.mark.parametrize("baselines", [("eager",), ("eager", "compile")])
def test_a_paired_evaluation_times_eager_only_beside_the_candidate(tmp_path: Path, monkeypatch, baselines):
    """Paired (the CPU default), eager is timed beside the candidate and nowhere else: no separate eager
    baseline job beforehand (it cost ~13 s for a 1 GiB ReLU, for a figure no verdict used); torch.compile,
    when asked for, still has its job."""
    from htam_agent.evaluation.parent import evaluator
    from htam_agent.evaluation.parent.candidate import Candidate
    from htam_agent.evaluation.parent.evaluator import Evaluator

    jobs: list[dict] = []
    monkeypatch.setattr(evaluator, "run_job", _scripted_checker(jobs, pair=True))
    ev = Evaluator(EvalOptions(backend="cpp", baselines=baselines), None, device="dev")
    v = ev.evaluate(Candidate(task_path=str(TASK), source="class ModelNew: pass\n"), use_store=False)
    assert [(j["mode"], j["baselines"]) for j in jobs] == (
        [("evaluate", ["eager"])] if baselines == ("eager",)
        else [("baseline", ["compile"]), ("evaluate", ["eager", "compile"])])
    assert v["speedup_vs_eager"] == 2.0 and v["timing"]["eager"]["paired"]
    assert v["speedup_vs_compile"] == (4.0 if "compile" in baselines else None)


def test_a_failed_pairing_is_judged_again_against_an_eager_baseline_measured_then(tmp_path: Path, monkeypatch):
    """The reference could not be timed beside the candidate: the candidate is judged again, unpaired, against
    an eager baseline measured then, and the verdict still says why it is unpaired."""
    from htam_agent.evaluation.parent import evaluator
    from htam_agent.evaluation.parent.candidate import Candidate
    from htam_agent.evaluation.parent.evaluator import Evaluator

    jobs: list[dict] = []
    monkeypatch.setattr(evaluator, "run_job", _scripted_checker(jobs, pair=False))
    ev = Evaluator(EvalOptions(backend="cpp", baselines=("eager", "compile")), None, device="dev")
    v = ev.evaluate(Candidate(task_path=str(TASK), source="class ModelNew: pass\n"), use_store=False)
    assert [(j["mode"], j["baselines"]) for j in jobs] == [
        ("baseline", ["compile"]), ("evaluate", ["eager", "compile"]),
        ("baseline", ["eager", "compile"]), ("evaluate", ["eager", "compile"])]
    assert [j["paired_eager"] for j in jobs if j["mode"] == "evaluate"] == [True, False]
    assert v["speedup_vs_eager"] == 3.0 and v["speedup_vs_compile"] == 4.0
    assert not v["timing"]["eager"].get("paired")
    assert any("could not be timed beside the candidate" in w for w in v["warnings"]), v.get("warnings")
