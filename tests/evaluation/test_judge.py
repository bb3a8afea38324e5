"""The checker's judgements as pure functions: the wall-clock bound, unreliable timings, output facts."""

from __future__ import annotations

import torch

from htam_agent.evaluation.checker import judge
from htam_agent.evaluation.common.verdict import VerdictBuilder


def _flags(v: VerdictBuilder) -> set[str]:
    return {f["name"] for f in v.get("flags")}


def test_honest_times_pass_the_wall_clock_bound():
    calibration = [0.08, 0.09, 0.1, 0.11, 0.12] * 5  # round-trip overhead of no-op calls, ms
    reported = [2.0 + 0.01 * (i % 5) for i in range(40)]
    walls = [r + 0.1 + 0.02 * (i % 3) for i, r in enumerate(reported)]
    for device in ("cuda", "cpu"):
        v = VerdictBuilder("t", "cuda")
        judge.WallClock(calibration, walls, reported, drain_ms=0.1).judge(v, device)
        assert _flags(v) == set()
        assert v.get("wall_clock")["reported_median_ms"] <= v.get("wall_clock")["checker_median_ms"]


def test_forged_times_are_flagged_where_the_bound_can_tell():
    calibration = [0.1] * 25
    walls = [20.0] * 30  # what the checker's clock saw
    v = VerdictBuilder("t", "cpp")
    judge.WallClock(calibration, walls, [2.0] * 30, drain_ms=0.1).judge(v, "cpu")  # a tenth of the truth
    assert "timing_below_wall_clock" in _flags(v)
    v = VerdictBuilder("t", "cuda")
    judge.WallClock(calibration, [1.0] * 30, [0.3] * 30, drain_ms=0.1).judge(v, "cuda")
    assert "timing_below_wall_clock" in _flags(v)
    v = VerdictBuilder("t", "cpp")  # a 2 ms lie on the CPU is inside the bound's resolution: not claimed
    judge.WallClock(calibration, [4.1] * 30, [2.0] * 30, drain_ms=0.1).judge(v, "cpu")
    assert _flags(v) == set()


def test_work_left_after_the_last_call_is_seen_in_the_drain():
    v = VerdictBuilder("t", "cuda")
    judge.WallClock([0.1] * 25, [1.2] * 30, [1.0] * 30, drain_ms=40.0).judge(v, "cuda")
    assert "work_after_return" in _flags(v)


def test_unreliable_spread_thresholds():
    assert judge.unreliable({"spread_pct": 12.0}, "cpu") and not judge.unreliable({"spread_pct": 12.0}, "cuda")
    assert not judge.unreliable({"spread_pct": 3.0}, "cpu")
    v = VerdictBuilder("t", "cpp")
    judge.flag_unreliable(v, "eager PyTorch", {"spread_pct": 31.0})
    assert v.get("flags") == [{"name": "timing_unreliable", "rejects": False, "reason": v.get("flags")[0]["reason"]}]
    assert "31%" in v.get("flags")[0]["reason"]


def test_output_facts_decide_before_values():
    ref = torch.zeros(4)
    plain = {"tensor": True, "plain": True, "device": "cpu", "strided": True, "type": "torch.Tensor"}
    assert judge.check_facts([plain], ref) is None
    lazy = dict(plain, plain=False, type="candidate.Lazy")
    assert judge.check_facts([lazy], ref).check == "not_a_plain_tensor"
    assert judge.check_facts([dict(plain, strided=False)], ref).check == "layout"
    assert judge.check_facts([{"tensor": False, "type": "list"}], ref).check == "not_a_tensor"
    assert judge.check_facts([plain, plain], ref).check == "output_count"
    res = judge.compare(ref, torch.ones(4), [plain], torch.device("cpu"))
    assert not res.passed and res.check == "values"
