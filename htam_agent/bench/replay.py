"""Replay a verdict table: every evaluation of a run answered from the table, no build, no sandbox.

The agent's graph runs unchanged (analyze, select, retrieve, generate with the exemplar coder, evaluate, update
memory); only its gateway is a `TableGateway`, injected through `RunContext.resources`. A candidate is looked up
by what it is, not by its bytes: its exemplar header gives (family, backend, knobs), `variant_id(knobs)` the
variant, the run's task the problem. A candidate the table does not hold (another coder's, another family, a
variant the job did not evaluate) is "not evaluated": never guessed, and the memory learns nothing from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from htam_agent.evaluation.common.verdict import VerdictBuilder, with_envelope
from htam_agent.evaluation.parent.gateway import EvaluationGateway, not_evaluated

from .table import Table, VariantRecord, load_table

_NOT_COMPILED = ("compile_error", "invalid_candidate")


def verdict_from_record(rec: VariantRecord, task: str, device_name: str | None = None) -> dict[str, Any]:
    """A verdict shaped like the evaluator's (status, correct, times, speedups, roofline, flags, reason), as the
    graph's readers (`Readout`, the analyze node, the memory) read it; `cached` marks it replayed."""
    v = VerdictBuilder(task, rec.backend)
    v.set_status(rec.status, rec.reason)
    v.set_compile(compiled=rec.status not in _NOT_COMPILED)
    v.set_correct(True if rec.status in ("accepted", "rejected") else (False if rec.status == "incorrect" else None))
    for name, ms in (("candidate", rec.time_ms), ("eager", rec.eager_ms), ("compile", rec.compile_ms)):
        if ms is not None:
            v.set_timing(name, {"median_ms": ms, "reps": rec.n_timings})
    for flag in rec.flags:
        v.add_flag(flag, f"{flag} (from the verdict table)", rejects=rec.status == "rejected")
    facts: dict[str, Any] = {"size": rec.size, "seed": rec.seed}
    if rec.roofline_fraction is not None or rec.bound is not None:
        facts["roofline"] = {"fraction": rec.roofline_fraction, "bound": rec.bound}
    if device_name:
        facts["device"] = {"name": device_name}
    v.record(**facts)
    out = dict(v.finalize())
    # the table's figures as measured (a summary of n_timings verdicts), not recomputed from rounded medians
    out["speedup_vs_eager"], out["speedup_vs_compile"] = rec.speedup_eager, rec.speedup_compile
    return with_envelope(out, cached=True)


def problem_id(task_path: str | Path) -> str:
    """The bench task id of a KernelBench file ("level1/19_ReLU"), else its file stem (see bench.suite)."""
    p = Path(task_path)
    return f"{p.parent.name}/{p.stem}" if p.parent.name.startswith("level") and p.parent.name[5:].isdigit() \
        else p.stem


class TableGateway(EvaluationGateway):
    """A gateway whose every answer comes from a verdict table (see the module docstring).

    `problems` maps a task path to its problem id where `problem_id(path)` would not name it (a task folder
    laid out otherwise); `calls` and `misses` count the candidates answered and those not in the table."""

    def __init__(self, table: Table | str | Path, backend: str, *, problems: Mapping[str, str] | None = None,
                 device_name: str | None = None) -> None:
        self.table = table if isinstance(table, Table) else load_table(table)
        self._backend = backend
        self.mode = "replay"
        self.evaluator = None  # type: ignore[assignment] - nothing is ever evaluated here
        self._verifier = None
        self.device_name = device_name
        self.problems = {str(Path(k).resolve()): v for k, v in (problems or {}).items()}
        self.calls = 0
        self.misses = 0

    @property
    def backend(self) -> str:
        return self._backend

    def problem_of(self, task_path: str) -> str:
        return self.problems.get(str(Path(task_path).resolve())) or problem_id(task_path)

    def record_for(self, cand: Any) -> tuple[VariantRecord | None, str]:
        """The table's record of a candidate, or None with the reason it has none."""
        from htam_agent.coder.exemplar.common import parse_header, variant_id

        parsed = parse_header(cand.source)
        if parsed is None:
            return None, "the candidate has no exemplar header (only the offline coder's candidates replay)"
        family, backend, knobs = parsed
        problem = self.problem_of(cand.task_path)
        if backend != self._backend:
            return None, f"the candidate is for the {backend} backend; the table answers for {self._backend}"
        variant = variant_id(knobs)
        rec = self.table.get(problem, variant, backend)
        if rec is None:
            held = len(self.table.variants(problem))
            return None, (f"the verdict table {self.table.path} has no record of {problem} variant {variant} "
                          f"({held} variants of this problem held)")
        if rec.family != family:
            return None, (f"the table's {problem} variant {variant} is of family {rec.family}, the candidate's "
                          f"header says {family}: the table was made by another coder; make it again")
        return rec, ""

    def _answer(self, cand: Any) -> dict[str, Any]:
        self.calls += 1
        rec, why = self.record_for(cand)
        if rec is None:
            self.misses += 1
            return not_evaluated(cand.name, self._backend, f"not evaluated: {why}")
        return verdict_from_record(rec, cand.name, self.device_name)

    def compile(self, cand: Any) -> dict[str, Any]:
        return self._answer(cand)

    def verify(self, cand: Any) -> dict[str, Any]:
        return self._answer(cand)

    def benchmark(self, cand: Any) -> dict[str, Any]:
        return self._answer(cand)


__all__ = ["TableGateway", "problem_id", "verdict_from_record"]
