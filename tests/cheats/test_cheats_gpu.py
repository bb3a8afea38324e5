"""The cheat catalogue on the GPU backends (cuda: NVRTC kernels, no 30 s builds; triton).

Runs on the device host:

    python -m pytest -m gpu tests/cheats/test_cheats_gpu.py -q

or without pytest's runner, `PYTHONPATH=. python tests/cheats/test_cheats_gpu.py`. The tables (cheat_catalogue.py)
were written without a GPU: a cheat must be turned down (incorrect / rejected / invalid_candidate), and
when a different check than the predicted one caught it the test passes with a warning naming it.
Predicted misses are non-strict xfails until verified here. Pattern 3 (side streams) is neutralised by the
device-wide synchronize rather than rejected: its reported time must not beat its same-stream twin's.
"""

from __future__ import annotations

import sys
import warnings

import pytest
from cheat_catalogue import (
    GPU_CHEATS,
    GPU_HONEST,
    NOT_ACCEPTED,
    SIDE_STREAM,
    SIDE_STREAM_TWIN,
    caught_by,
    task_path,
)

from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions

pytestmark = pytest.mark.gpu

TIMING_PLAN = {"target_s": 0.05, "min_reps": 3, "max_reps": 10}
_EVALUATORS: dict = {}


def _evaluate(entry) -> dict:
    key = (entry.backend, entry.size)
    if key not in _EVALUATORS:
        opts = EvalOptions(backend=entry.backend, size=entry.size, baselines=(), timing=True,
                           timing_plan=TIMING_PLAN, run_timeout_s=120)
        _EVALUATORS[key] = Evaluator(opts, store=None)
    cand = Candidate(task_path=str(task_path(entry.task)), source=entry.source)
    return _EVALUATORS[key].evaluate(cand, use_store=False)


def check_cheat(cheat) -> list[str]:
    v = _evaluate(cheat)
    names = caught_by(v)
    assert v["accepted"] is False, f"{cheat.id} was accepted: {v['reason']}"
    assert v["status"] in NOT_ACCEPTED, f"{cheat.id}: status {v['status']}: {v['reason']}"
    assert names and v["reason"], f"{cheat.id}: turned down without a named check: {v['reason']}"
    if cheat.caught_by and not set(names) & cheat.caught_by:
        warnings.warn(f"{cheat.id}: caught by {names}, predicted {sorted(cheat.caught_by)}", stacklevel=1)
    return names


def check_honest(honest) -> dict:
    v = _evaluate(honest)
    assert v["status"] == "accepted", f"{honest.id}: {v['status']}: {v['reason']} (flags: {v.get('flags')})"
    return v


def check_side_stream() -> None:
    twin = check_honest(SIDE_STREAM_TWIN)
    v = _evaluate(SIDE_STREAM)
    if v["accepted"]:
        cheat_ms = v["timing"]["candidate"]["median_ms"]
        twin_ms = twin["timing"]["candidate"]["median_ms"]
        assert cheat_ms >= 0.5 * twin_ms, (
            f"side-stream launch timed at {cheat_ms:.4f} ms against {twin_ms:.4f} ms on the current stream: "
            "work on other streams escapes the timer")


def _cheat_params():
    for c in GPU_CHEATS:
        marks = [] if c.caught_by else [pytest.mark.xfail(strict=False, reason=f"predicted miss: {c.missing}")]
        yield pytest.param(c, id=c.id, marks=marks)


@pytest.mark.parametrize("cheat", list(_cheat_params()))
def test_gpu_cheat_is_turned_down(cheat):
    check_cheat(cheat)


@pytest.mark.parametrize("honest", [pytest.param(h, id=h.id) for h in GPU_HONEST])
def test_gpu_honest_look_alike_is_accepted(honest):
    check_honest(honest)


def test_side_stream_gains_nothing():
    check_side_stream()


if __name__ == "__main__":
    failed = 0
    runs = [(f"cheat {c.id}", lambda c=c: check_cheat(c)) for c in GPU_CHEATS]
    runs += [(f"honest {h.id}", lambda h=h: check_honest(h)) for h in GPU_HONEST]
    runs += [("side stream", check_side_stream)]
    for name, fn in runs:
        try:
            fn()
            print(f"PASS {name}", flush=True)
        except AssertionError as exc:
            failed += 1
            print(f"FAIL {name}: {exc}", flush=True)
    sys.exit(1 if failed else 0)
