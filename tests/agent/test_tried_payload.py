"""What every generation branch is told the task already measured (nodes.evaluate.tried_payload)."""

from __future__ import annotations

from htam_agent.nodes.generate import TRIED_WITH_CODE, tried_payload

OK = {"status": "accepted", "accepted": True, "speedup_vs_eager": 1.5, "roofline": {"fraction": 0.4},
      "reason": "accepted: correct on all trials"}
BAD = {"status": "incorrect", "accepted": False, "reason": "max abs error 2.0 on trial 'large magnitude'"}


def _cand(step: int, variant: int, repair: int, verdict: dict | None, code: str | None = "code") -> dict:
    return {"step": step, "variant": variant, "repair": repair, "code": code and f"{code} s{step}v{variant}r{repair}",
            "verdict": verdict, "direction": "memory_access", "strategy_ids": ["ma_vectorized_loads"]}


def test_finished_steps_last_repairs_real_verdicts_only():
    state = {"history": [{"step": 0}, {"step": 1}], "step": 2, "candidates": [
        _cand(0, 0, 0, BAD), _cand(0, 0, 1, OK),                   # repaired: the repair counts
        _cand(0, 1, 0, {"status": "not_evaluated", "not_evaluated": True}),   # never measured: not listed
        _cand(1, 0, 0, BAD),
        _cand(1, 1, 0, {"status": "no_code", "no_code": True}, code=None),  # nothing written: not listed
        _cand(2, 0, 0, None),                                      # the step in progress: not listed
    ]}
    got = tried_payload(state)
    assert [(t["step"], t["code"]) for t in got] == [(0, "code s0v0r1"), (1, "code s1v0r0")]
    assert got[0]["outcome"] == "accepted, 1.50x vs eager, 40% of the roofline" and got[0]["accepted"]
    assert got[1]["outcome"] == "incorrect: max abs error 2.0 on trial 'large magnitude'"
    assert got[1]["direction"] == "memory_access" and got[1]["strategies"] == ["ma_vectorized_loads"]


def test_only_the_newest_carry_their_code():
    n = TRIED_WITH_CODE + 5
    state = {"history": [{"step": s} for s in range(n)], "candidates": [_cand(s, 0, 0, OK) for s in range(n)]}
    got = tried_payload(state)
    assert len(got) == n and all(t["outcome"] for t in got)
    assert [t["code"] for t in got[:5]] == [""] * 5 and all(t["code"] for t in got[5:])
