"""What a verdict makes and copies, phase by phase (issue 36): counts, never seconds (speed goals live in
benchmarks/verdict_memory.py).

An honest OpenMP leaky ReLU of the bundled suite, the cpp backend's default evaluation (every check, the eager
baseline timed beside it). Before, every upload of inputs was a fresh shared mapping: the calibration, the first
call, seven compared calls, the op trace, the sabotage and the other init arguments made ten full-size mappings of
one shape, each page-faulted in by the checker's copy and mapped again by the sandbox's read (a 1 GiB verdict's
system time). Now a freed buffer of the same shape is filled again, outside the timed phase. And a re-checked timed
output, read again later, was judged against a second reference (the timed set drawn again, its perturbations
replayed, a forward); unchanged, it is judged by its digest."""

from __future__ import annotations

import pytest

from htam_agent.bundled_tasks import SUITE_DIR, candidate_files
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions

pytestmark = pytest.mark.slow


def test_one_input_buffer_serves_every_untimed_call_and_each_phase_says_what_it_cost(build_root: str) -> None:
    task = SUITE_DIR / "elementwise_leaky_relu.py"
    cand = next(c for c in candidate_files("elementwise_leaky_relu", "cpp") if c.stem == "cpp_omp")
    opts = EvalOptions(backend="cpp", build_root=build_root, baselines=("eager",),
                       timing_plan={"target_s": 0.05, "min_reps": 5, "max_reps": 10})
    verdict = Evaluator(opts, store=None).evaluate(Candidate(task_path=str(task), source=cand.read_text()),
                                                   use_store=False)
    assert verdict["status"] == "accepted", verdict.get("reason")
    costs = verdict["phase_costs"]

    def total(key: str, phases: tuple[str, ...]) -> int:
        return sum(int(costs.get(p, {}).get(key, 0)) for p in phases)

    untimed = ("calibrate", "first_call", "verify", "check_ops")
    assert total("inputs_mapped", untimed) == 1, costs  # the calibration's buffer, refilled by every call after it
    assert total("inputs_refilled", untimed) >= 9, costs  # first call, 6 trials + the second call, the op trace
    assert total("outputs_sealed", ("verify",)) == 7, costs  # each compared output handed back once
    assert total("inputs_mapped", ("sabotage", "verify_other_init", "verify_other_shape")) <= 2, costs
    assert total("inputs_mapped", ("time",)) >= 1  # the timed sets are made apart (their re-checks need the room)
    for phase in ("verify", "time"):
        assert costs[phase]["checker_user_s"] > 0 and costs[phase]["sandbox_user_s"] + costs[phase].get(
            "sandbox_sys_s", 0) > 0, costs[phase]
    # a re-checked timed output read again unchanged is judged by its digest, not by a second reference
    assert total("rechecks_unchanged", ("time",)) >= 2 and total("rechecks_recomputed", ("time",)) == 0, costs
    assert costs["time"].get("reference_user_s", 0) + costs["time"].get("reference_sys_s", 0) > 0, costs["time"]
