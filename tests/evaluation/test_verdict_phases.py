"""A verdict's phase says where its failure happened (issue 36): an out-of-memory before the candidate was
imported (the checker's clock calibration, in a phase of its own) is the evaluator's `error`, never the
candidate's `out_of_memory` "during compile"."""

from __future__ import annotations

from pathlib import Path

from htam_agent.bundled_tasks import CANDIDATES_DIR
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions

TASK = Path(__file__).parent / "memory_tasks" / "expand_128tib.py"
HONEST = CANDIDATES_DIR / "elementwise_leaky_relu" / "cpp_omp.py"  # never imported: the failure comes first


def test_an_out_of_memory_before_the_candidate_is_imported_is_the_evaluators(build_root: str) -> None:
    ev = Evaluator(EvalOptions(backend="cpp", size="default", baselines=(), fit=False, build_root=build_root),
                   store=None)
    v = ev.evaluate(Candidate(task_path=str(TASK), source=HONEST.read_text()), use_store=False)
    assert v["status"] == "error", (v["status"], v.get("reason"))
    assert v["phase"] == "calibrate", v.get("phase")
    reason = str(v.get("reason"))
    assert "ran out of memory" in reason and "before the candidate was imported" in reason, reason
    assert "during compile" not in reason, reason
    assert not v.get("compiled"), "the candidate was never imported, so never compiled"
