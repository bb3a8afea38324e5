"""Run functions the bench tests inject in place of the agent (until and besides the real one).

`evaluating_run_fn` does real work: it evaluates the task's bundled honest cpp candidates with the real
evaluator (worker processes, correctness trials, timing against eager) and turns the verdicts into a
RunResult, spending one evaluation per candidate up to the context's candidates x steps.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from htam_agent.context import RunContext
from htam_agent.run.result import RunResult
from htam_agent.state import StepRecord


def _build_root() -> str:
    """The session's build folder (tests/conftest.py sets HTAM_BUILD_DIR), read when a run starts."""
    return os.environ.get("HTAM_BUILD_DIR") or os.environ.get("HTAM_TEST_BUILD_DIR") or "/tmp/htam_test_builds"


def evaluating_run_fn(task_path: str, ctx: RunContext, *, run_id: str | None = None) -> RunResult:
    from htam_agent.bundled_tasks import candidate_files
    from htam_agent.evaluation.parent.candidate import Candidate
    from htam_agent.evaluation.parent.evaluator import Evaluator
    from htam_agent.evaluation.parent.options import EvalOptions

    t0 = time.time()
    stem = Path(task_path).stem
    files = candidate_files(stem, "cpp")[: ctx.steps * ctx.candidates]
    if not files:
        raise RuntimeError(f"no bundled cpp candidate for {stem}")
    opts = EvalOptions(backend="cpp", baselines=("eager",), build_root=_build_root(), alt_size=None, trials=2,
                       timing_plan={"target_s": 0.05, "min_reps": 3, "max_reps": 10})
    art = Path(ctx.runs_path()) / (run_id or stem)
    art.mkdir(parents=True, exist_ok=True)
    ev = Evaluator(opts)
    best, steps = None, []
    for i, f in enumerate(files):
        v = ev.evaluate(Candidate(task_path=task_path, source=f.read_text()))
        (art / f"eval_{i}.json").write_text(json.dumps(v, default=str))
        steps.append(StepRecord(step=i, direction=None, direction_reason="bundled candidate", strategies=[],
                                status=v["status"], accepted=v["accepted"],
                                speedup_vs_eager=v.get("speedup_vs_eager"), speedup_vs_compile=None,
                                roofline_fraction=None, repairs=0, candidates=1, reason=v.get("reason", "")))
        if v["accepted"] and (best is None or (v.get("speedup_vs_eager") or 0) > (best[1].get("speedup_vs_eager") or 0)):
            best = (i, v, f)
    code_path = None
    if best is not None:
        code_path = str(art / "best.py")
        Path(code_path).write_text(best[2].read_text())
    return RunResult(
        run_id=run_id or stem, task=stem, task_path=task_path, backend="cpp", coder="exemplar", uses_llm=False,
        method=ctx.memory_mode, correct=best is not None,
        best_speedup_vs_eager=None if best is None else best[1].get("speedup_vs_eager"),
        best_speedup_vs_compile=None, best_roofline_fraction=None,
        best_step=None if best is None else best[0], best_code_path=code_path, artifact_dir=str(art),
        evaluations=len(files), llm_calls=0, input_tokens=0, output_tokens=0,
        wall_seconds=round(time.time() - t0, 3), stop_reason="budget", steps=steps)


def logging_run_fn(log_path: str, sleep_s: float = 0.0, fail_tasks: tuple[str, ...] = ()):
    """A quick run function that appends 'start KEY' / 'end KEY' lines to log_path (to count invocations)."""

    def run(task_path: str, ctx: RunContext, *, run_id: str | None = None) -> RunResult:
        with open(log_path, "a") as f:
            f.write(f"start {run_id}\n")
        time.sleep(sleep_s)
        stem = Path(task_path).stem
        if stem in fail_tasks:
            raise RuntimeError(f"endpoint down for {stem}")
        speed = 0.5 + (sum(map(ord, f"{stem}{ctx.memory_mode}{ctx.candidates}")) % 30) / 10
        res = RunResult(
            run_id=run_id or stem, task=stem, task_path=task_path, backend=ctx.backend, coder="exemplar",
            uses_llm=False, method=ctx.memory_mode, correct=not stem.startswith("conv"),
            best_speedup_vs_eager=speed, best_speedup_vs_compile=speed / 2, best_roofline_fraction=None,
            best_step=0, best_code_path=None, artifact_dir=str(ctx.runs_path() / (run_id or stem)),
            evaluations=ctx.steps * ctx.candidates, llm_calls=ctx.steps, input_tokens=100, output_tokens=50,
            wall_seconds=sleep_s, stop_reason="budget")
        with open(log_path, "a") as f:
            f.write(f"end {run_id}\n")
        return res

    return run


class BundledCoder:
    """A coder for the real agent that proposes the task's bundled honest cpp candidate (no LLM)."""

    name = "bundled"
    uses_llm = False

    def __init__(self) -> None:
        self.requests = []

    def propose(self, request):
        from htam_agent.bundled_tasks import candidate_files
        from htam_agent.coder.base import CodeProposal

        self.requests.append(request)
        files = candidate_files(request.task_name, "cpp")
        code = files[-1].read_text() if files else None
        return CodeProposal(code=code, coder=self.name, uses_llm=False, prompt=f"step {request.step}",
                            strategy_ids=[s.id for s in request.strategies],
                            error="" if code else f"no bundled cpp candidate for {request.task_name}")


def agent_with_bundled_coder(task_path: str, ctx: RunContext, *, run_id: str | None = None) -> RunResult:
    """The real agent (graph, evaluator, memory, artifacts) with BundledCoder writing the code."""
    from htam_agent.agent import run_optimization

    return run_optimization(task_path, ctx, run_id=run_id, coder=BundledCoder())
