"""A candidate timed alone (the GPU's default) is judged against the eager baseline's own requests, and a
baseline's figure is never lifted by the checker's floor (issue 25: fair timing per verdict).

Pure judgements over `judge.WallClock`s, plus one real baseline job on the CPU to show the facts the
candidate's job needs are in the baseline verdict the evaluator hands on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_agent.bundled_tasks import candidate_files
from htam_agent.evaluation.checker import judge
from htam_agent.evaluation.runner import Candidate, EvalOptions, Evaluator, _baseline_facts

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "htam_agent/bundled_tasks/suite/elementwise_leaky_relu.py"

# A calibration made before the import that under-counts what a loaded model's request costs: 0.10 ms,
# where every real request (the reference's and an honest candidate's) takes 0.25 ms beyond the call.
LOW_CALIBRATION = [0.10] * 25


def _baseline(beyond: float, se: float = 0.002) -> dict:
    return {"status": "accepted", "timing": {"eager": {"median_ms": 0.44, "wall_clock": {
        "beyond_call_ms": beyond, "beyond_call_se_ms": se}}}}


def _settled(wall: judge.WallClock, reported: float, device: str) -> dict:
    """What `time_candidate` hands on: the in-process figures settled against the calibration."""
    return wall.settle({"median_ms": reported, "spread_pct": 3.0}, device)


def test_the_calibrations_floor_lifts_an_honest_sub_ms_call():
    # The failure the baseline comparison removes: 0.44 ms calls, 0.25 ms beyond each, calibrated at 0.10.
    wall = judge.WallClock(LOW_CALIBRATION, [0.69] * 40, [0.44] * 40)
    out = _settled(wall, 0.44, "cuda")
    assert out["clock"] == "checker" and out["median_ms"] > 0.44 * 1.2


def test_against_the_baselines_requests_an_honest_call_stands():
    wall = judge.WallClock(LOW_CALIBRATION, [0.69 + 0.001 * (i % 3) for i in range(40)], [0.44] * 40)
    out = judge.settle_alone(_settled(wall, 0.44, "cuda"), wall, _baseline(0.25), "cuda")
    assert out["clock"] == "in_process" and out["median_ms"] == pytest.approx(0.44)
    assert out["beyond_call_ms"] == pytest.approx(0.251, abs=1e-3)


def test_against_the_baselines_requests_a_hidden_share_is_added_back():
    # The candidate's clock reports a third of the 0.44 ms the checker saw: the excess over what the
    # reference's requests took beyond their calls is added back, to within the GPU's 5%.
    wall = judge.WallClock(LOW_CALIBRATION, [0.69] * 40, [0.15] * 40)
    out = judge.settle_alone(_settled(wall, 0.15, "cuda"), wall, _baseline(0.25), "cuda")
    assert out["clock"] == "checker"
    assert out["median_ms"] == pytest.approx(0.44, abs=1e-6)
    # and a share within the slack is believed, as in the paired estimator
    wall = judge.WallClock(LOW_CALIBRATION, [0.69] * 40, [0.43] * 40)
    assert judge.settle_alone(_settled(wall, 0.43, "cuda"), wall, _baseline(0.25), "cuda")["median_ms"] == 0.43


@pytest.mark.parametrize("facts", [
    None, {}, {"timing": {}}, {"timing": {"eager": {"median_ms": 1.0}}},
    {"timing": {"eager": {"wall_clock": {"beyond_call_ms": "0.2", "beyond_call_se_ms": 0.0}}}},
    {"timing": {"eager": {"wall_clock": {"beyond_call_ms": float("nan"), "beyond_call_se_ms": 0.0}}}},
    {"timing": {"eager": {"wall_clock": {"beyond_call_ms": True, "beyond_call_se_ms": 0.0}}}},
    {"timing": "eager"},
])
def test_without_the_baselines_requests_the_calibrations_floor_stands(facts):
    # A baseline stored before these figures were recorded, or none at all: the floor is the guard.
    wall = judge.WallClock(LOW_CALIBRATION, [0.69] * 40, [0.15] * 40)
    settled = _settled(wall, 0.15, "cuda")
    assert judge.reference_beyond(facts) is None
    assert judge.settle_alone(settled, wall, facts, "cuda") == settled
    assert settled["clock"] == "checker"


def test_a_baselines_figure_is_never_lifted():
    wall = judge.WallClock(LOW_CALIBRATION, [0.69] * 40, [0.44] * 40)
    out = judge.baseline_record(_settled(wall, 0.44, "cuda"))
    assert out["clock"] == "in_process" and out["median_ms"] == 0.44
    assert out["checker_ms"] > 0.44  # the checker's estimate stays in the record


def test_an_unpaired_candidate_is_judged_against_its_baselines_requests(build_root):
    """Real verdicts on the CPU with pairing off: the eager baseline records its requests' time beyond the
    call and keeps its in-process median, the facts handed to the candidate's job carry both, and the
    candidate's figure of record was settled against them."""
    ev = Evaluator(EvalOptions(backend="cpp", baselines=("eager",), paired_eager=False, build_root=build_root,
                               timing_plan={"target_s": 0.05, "min_reps": 10, "max_reps": 20}), store=None)
    cand = Candidate(task_path=str(TASK), source=candidate_files(TASK.stem, "cpp")[0].read_text())
    base = ev.baseline(cand, fresh=True)
    eager = base["timing"]["eager"]
    assert eager["clock"] == "in_process" and eager["median_ms"] == eager["in_process_median_ms"]
    clock = eager["wall_clock"]
    assert clock["beyond_call_ms"] > 0 and clock["beyond_call_se_ms"] >= 0
    ref = judge.reference_beyond(_baseline_facts(base))
    assert ref == (clock["beyond_call_ms"], clock["beyond_call_se_ms"])
    v = ev.evaluate(cand, use_store=False)
    assert v["accepted"], v["reason"]
    timed = v["timing"]["candidate"]
    assert timed["clock"] in ("in_process", "checker") and "beyond_call_excess_ms" in timed
    assert timed["beyond_call_excess_ms"] == pytest.approx(timed["beyond_call_ms"] - ref[0], abs=1e-3)
    assert not v["timing"]["eager"].get("paired")
