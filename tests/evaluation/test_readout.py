"""The one reader of a verdict: memory status, facts, and the texts (LLM, repair, tool, person) agree."""

from __future__ import annotations

import json

from htam_agent.evaluation.common.verdict import VerdictBuilder
from htam_agent.evaluation.parent.readout import NEAR_ROOFLINE, Readout


def _accepted(fraction: float | None = 0.5) -> dict:
    v = VerdictBuilder("relu", "cuda")
    v.set_status("accepted")
    v.set_correct(True)
    v.set_timing("candidate", {"median_ms": 2.0, "iqr_ms": 0.01, "spread_pct": 0.5, "min_ms": 1.9, "reps": 50})
    if fraction is not None:
        v.record(roofline={"fraction": fraction, "bound": "memory", "floor_ms": 1.0, "bandwidth_GBps": 4000.0})
    v.attach_baseline({"status": "accepted", "flags": [], "timing": {
        "eager": {"median_ms": 3.0, "iqr_ms": 0.02, "spread_pct": 0.7, "min_ms": 2.9, "reps": 50},
        "compile": {"median_ms": 1.8, "iqr_ms": 0.02, "spread_pct": 0.7, "min_ms": 1.7, "reps": 50}}})
    v.add_flag("timing_unreliable", "spread 12%", rejects=False)
    return v.finalize()


def test_memory_status_follows_the_verdict():
    assert Readout(_accepted(0.5)).memory_status == "correct_slow"
    assert Readout(_accepted(NEAR_ROOFLINE)).memory_status == "near_roofline"
    assert Readout(_accepted(None)).memory_status == "correct_slow"
    assert Readout({"status": "compile_error"}).memory_status == "compile_error"
    nvrtc = {"status": "runtime_error", "reason": "first call: nvrtc: error: identifier x is undefined"}
    assert Readout(nvrtc).failed_to_compile and Readout(nvrtc).memory_status == "compile_error"
    assert Readout({"status": "runtime_error", "reason": "illegal memory access"}).memory_status == "incorrect"
    assert Readout({"status": "incorrect"}).memory_status == "incorrect"


def test_texts_carry_the_same_figures():
    r = Readout(_accepted(0.5))
    assert r.brief().startswith("status accepted; 1.50x vs eager PyTorch; 0.90x vs torch.compile; median 2 ms")
    assert "50% of the roofline (memory-bound)" in r.brief() and "flags: timing_unreliable" in r.brief()
    tool = json.loads(r.tool_answer())
    assert tool["speedup_vs_eager"] == 1.5 and tool["roofline_fraction"] == 0.5 and tool["flags"] == ["timing_unreliable"]
    text = r.text()
    assert "status    ACCEPTED" in text and "speedup   1.500x vs eager, 0.900x vs torch.compile" in text
    assert "flag      timing_unreliable (warning): spread 12%" in text
    assert r.facts() == {"candidate_ms": 2.0, "eager_ms": 3.0, "compile_ms": 1.8, "floor_ms": 1.0,
                         "bound": "memory", "bandwidth_GBps": 4000.0, "fp32_tflops": None, "device": None}


def test_repair_feedback_keeps_the_compiler_tail():
    v = VerdictBuilder("relu", "cpp")
    v.set_status("compile_error")
    v.set_compile(message="x" * 5000 + "\nmain.cpp:3:1: error: expected ';'")
    fb = Readout(v.finalize()).feedback()
    assert fb.startswith("status: compile_error\ncompile error: main.cpp:3:1: error: expected ';'")
    assert fb.endswith("error: expected ';'") and len(fb) < 3200


def test_missing_or_malformed_verdicts_read_safely():
    assert Readout(None).brief() == "no verdict recorded" and Readout(None).facts() is None
    odd = {"status": "accepted", "accepted": True, "timing": "garbled", "roofline": ["x"],
           "speedup_vs_eager": "nan", "flags": ["legacy"]}
    r = Readout(odd)
    assert r.speedup_vs_eager is None and r.roofline_fraction is None and r.median_ms() is None
    assert r.flag_names == ["legacy"] and r.memory_status == "correct_slow"


def test_a_slow_cuda_build_is_told_the_fast_form():
    slow = {"status": "incorrect", "reason": "wrong values", "backend": "cuda", "build_seconds": 27.4,
            "compile_seconds": 28.0}
    for text in (Readout(slow).feedback(), Readout(slow).brief()):
        assert "Build: 27 s" in text and "fast CUDA launcher" in text
    fast = dict(slow, build_seconds=2.9)
    assert Readout(fast).build_hint == "" and "fast CUDA launcher" not in Readout(fast).feedback()
    cached = dict(slow, build_seconds=0.0)           # a build-cache hit cost nothing: no hint
    assert Readout(cached).build_hint == ""
    assert Readout(dict(slow, backend="cpp")).build_hint == ""
