"""The cheat catalogue on the cpp backend: every cheat is turned down, every honest look-alike accepted.

Real worker processes and a real C++ build: all candidates get one shared extension at test time (identical
`load_inline` arguments, see sync_extension.py), so it compiles once per session (~40 s on two cores) and
each verdict then takes a few seconds. Timing runs with a short plan so that the timing-phase checks
(re-checked timed outputs, roofline, sabotage) are exercised too.

    python -m pytest tests/cheats/test_cheats_cpp.py -q                  # the default lane's sample
    python -m pytest tests/cheats/test_cheats_cpp.py -q -m exhaustive    # every other entry

The default run evaluates a sample (cheat_catalogue.default_sample: one cheat per pattern and one per check
that turns a cheat down, as test_cheat_catalogue.py checks; one honest look-alike per task); the other
entries carry the `exhaustive` mark, so that the whole catalogue still runs where it matters (`-m "not gpu"`,
before a release, after a change to the checks).

Cheats the evaluator does not catch yet are strict xfails naming the missing check (cheat_catalogue.py);
when the check lands the test XPASSes, which fails the run until the table is updated (a few marked `flaky`
are caught by chance on some runs and are non-strict). Set
HTAM_CHEAT_REPORT=path.jsonl to append one line per verdict (file, status, what caught it, reason).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from cheat_catalogue import (
    CPP_CHEATS,
    HONEST,
    NOT_ACCEPTED,
    caught_by,
    default_honest_sample,
    default_sample,
    task_path,
)

from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions

pytestmark = pytest.mark.slow

TIMING_PLAN = {"target_s": 0.05, "min_reps": 3, "max_reps": 10}
P18_TMP = Path(tempfile.gettempdir()) / "htam_cheat_p18_cache"


@pytest.fixture(scope="module")
def evaluator(build_root: str) -> Evaluator:
    opts = EvalOptions(backend="cpp", baselines=(), timing=True, timing_plan=TIMING_PLAN, build_root=build_root,
                       run_timeout_s=120)
    return Evaluator(opts, store=None)


@pytest.fixture(autouse=True, scope="module")
def _clean_tmp_cache():
    shutil.rmtree(P18_TMP, ignore_errors=True)
    yield
    shutil.rmtree(P18_TMP, ignore_errors=True)


def _report(record_property, file: str, v: dict) -> list[str]:
    names = caught_by(v)
    record_property("status", v["status"])
    record_property("caught_by", ",".join(names))
    record_property("reason", v.get("reason", "")[:300])
    out = os.environ.get("HTAM_CHEAT_REPORT")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps({"file": file, "status": v["status"], "accepted": v["accepted"], "caught_by": names,
                                "flags": [f["name"] for f in v.get("flags", [])], "reason": v.get("reason", ""),
                                "timing_ms": (v.get("timing", {}).get("candidate") or {}).get("median_ms"),
                                "roofline": v.get("roofline")}) + "\n")
    return names


def _evaluate(evaluator: Evaluator, entry) -> dict:
    return evaluator.evaluate(Candidate(task_path=str(task_path(entry.task)), source=entry.source), use_store=False)


def _cheat_params():
    sampled = {c.id for c in default_sample(CPP_CHEATS)}
    for c in CPP_CHEATS:
        marks = [] if c.caught_by else [pytest.mark.xfail(strict=not c.flaky, reason=f"not caught yet: {c.missing}")]
        if c.id not in sampled:
            marks.append(pytest.mark.exhaustive)
        yield pytest.param(c, id=c.id, marks=marks)


@pytest.mark.parametrize("cheat", list(_cheat_params()))
def test_cheat_is_turned_down(evaluator, cheat, record_property):
    v = _evaluate(evaluator, cheat)
    names = _report(record_property, cheat.file, v)
    assert v["accepted"] is False, f"{cheat.id} was accepted: {v['reason']}"
    assert v["status"] in NOT_ACCEPTED, f"{cheat.id}: status {v['status']}: {v['reason']}"
    assert v["reason"], "a verdict that turns a candidate down must say why"
    assert names, f"{cheat.id}: no flag or failed check named in the verdict: {v['reason']}"
    if cheat.caught_by:
        assert set(names) & cheat.caught_by, (
            f"{cheat.id}: expected one of {sorted(cheat.caught_by)}, got {names}: {v['reason']}")


def _honest_params():
    sampled = {h.id for h in default_honest_sample(HONEST)}
    for h in HONEST:
        marks = [pytest.mark.xfail(strict=True, reason=f"false alarm: {h.false_alarm}")] if h.false_alarm else []
        if h.id not in sampled:
            marks.append(pytest.mark.exhaustive)
        yield pytest.param(h, id=h.id, marks=marks)


@pytest.mark.parametrize("honest", list(_honest_params()))
def test_honest_look_alike_is_accepted(evaluator, honest, record_property):
    v = _evaluate(evaluator, honest)
    _report(record_property, honest.file, v)
    assert v["status"] == "accepted", f"{honest.id}: {v['status']}: {v['reason']} (flags: {v.get('flags')})"
    assert not [f for f in v["flags"] if f.get("rejects")]
