"""The boundary's protocol and clock against candidates that attack them (issue 25, classes 1-5 and 11),
each followed by an honest victim that must get the verdict it gets alone.

Turned down: a forged or early reply and a malformed one (protocol_violation), evidence checks detected
(kernel_use_not_shown). Neutralised: work moved after or before the timed window, and a slowed clock;
they compute the right numbers, so they may be accepted, but their time of record must be their honest
twin's (the same kernel), within the clock's slack and this machine's noise, not the 4-22x they reported
before. One session build of the catalogue's shared extension serves every candidate here.
"""

from __future__ import annotations

import pytest
from cheat_catalogue import CLOCK_BOUNDED, HERE, task_path
from sync_extension import source_of

from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions

pytestmark = pytest.mark.slow

TIMING_PLAN = {"target_s": 0.1, "min_reps": 10, "max_reps": 20}
TASK = str(task_path("elementwise_leaky_relu"))
TWIN = HERE / "honest" / "h19_leaky_plain.py"
# The ratio a neutralised cheat's time of record must keep to its twin's: the clock's slack is 10% on the
# CPU; the rest is a loaded 2-core machine's noise. The attacks gained 4x to 22x before.
NEUTRALISED_FLOOR = 0.6


@pytest.fixture(scope="module")
def evaluator(build_root: str) -> Evaluator:
    opts = EvalOptions(backend="cpp", baselines=(), timing=True, timing_plan=TIMING_PLAN, build_root=build_root,
                       run_timeout_s=120)
    return Evaluator(opts, store=None)


def _evaluate(evaluator: Evaluator, name: str) -> dict:
    path = HERE / "cpp" / name if not name.startswith("honest/") else HERE / name
    return evaluator.evaluate(Candidate(task_path=TASK, source=source_of(path)), use_store=False)


def _ms(v: dict) -> float:
    return v["timing"]["candidate"]["median_ms"]


@pytest.fixture(scope="module")
def twin(evaluator: Evaluator) -> dict:
    v = _evaluate(evaluator, "honest/h19_leaky_plain.py")
    assert v["accepted"], v["reason"]
    return v


def _victim_unharmed(evaluator: Evaluator, twin: dict) -> None:
    v = _evaluate(evaluator, "honest/h19_leaky_plain.py")
    assert v["accepted"], f"the victim after the attacker: {v['reason']}"
    assert not [f for f in v["flags"] if f["rejects"]]
    assert 0.33 < _ms(v) / _ms(twin) < 3.0, (_ms(v), _ms(twin))


@pytest.mark.parametrize("name, flag", [
    ("p19_forged_early_reply.py", "protocol_violation"),
    ("p19_deep_json_reply.py", "protocol_violation"),
    ("p10_evidence_detected.py", "kernel_use_not_shown"),
])
def test_protocol_attacks_are_turned_down_and_leave_the_victim_alone(evaluator, twin, name, flag):
    v = _evaluate(evaluator, name)
    assert not v["accepted"], v["reason"]
    assert v["status"] == "rejected", (v["status"], v["reason"])
    assert flag in {f["name"] for f in v["flags"] if f["rejects"]}, v["reason"]
    assert "evaluator error" not in v["reason"]
    _victim_unharmed(evaluator, twin)


@pytest.mark.parametrize("name", [c.file.removeprefix("cpp/") for c in CLOCK_BOUNDED])
def test_work_outside_the_window_and_slowed_clocks_gain_nothing(evaluator, twin, name):
    v = _evaluate(evaluator, name)
    if v["accepted"]:
        ratio = _ms(v) / _ms(twin)
        assert ratio >= NEUTRALISED_FLOOR, (
            f"{name}: time of record {_ms(v):.3f} ms vs its honest twin's {_ms(twin):.3f} ms "
            f"(in process {v['timing']['candidate'].get('in_process_median_ms')}, wall clock {v.get('wall_clock')})")
    else:
        assert v["status"] in ("rejected", "incorrect"), (v["status"], v["reason"])
    _victim_unharmed(evaluator, twin)
