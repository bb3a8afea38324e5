"""What one optimization run returns: the compact summary the CLI, the LangChain tool and the bench share.

Plain dataclasses of JSON types, so a result crosses process and host boundaries (Ray) as JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class StepSummary:
    step: int
    direction: str | None
    direction_reason: str
    strategies: list[str]
    status: str                      # the best verdict status of the step's candidates
    accepted: bool
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    roofline_fraction: float | None
    repairs: int
    candidates: int
    reason: str                      # the evaluator's one-line reason for the step's best candidate


@dataclass
class RunResult:
    run_id: str
    task: str
    task_path: str
    backend: str
    coder: str                       # "exemplar" or the model name
    uses_llm: bool
    method: str                      # htam | flat | none memory, plus policy / ablations
    correct: bool                    # at least one accepted candidate
    best_speedup_vs_eager: float | None
    best_speedup_vs_compile: float | None
    best_roofline_fraction: float | None
    best_step: int | None
    best_code_path: str | None       # ready-to-use ModelNew file in the artifact folder
    artifact_dir: str
    evaluations: int                 # candidates evaluated (repairs included)
    llm_calls: int
    input_tokens: int
    output_tokens: int
    wall_seconds: float
    stop_reason: str                 # budget | target_speedup | roofline | interrupted | error
    steps: list[StepSummary] = field(default_factory=list)
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        data = dict(data)
        data["steps"] = [StepSummary(**s) for s in data.get("steps", [])]
        return cls(**data)

    def headline(self) -> str:
        if not self.correct:
            return f"{self.task}: no correct candidate in {self.evaluations} evaluation(s) ({self.stop_reason})"
        s = self.best_speedup_vs_eager
        c = self.best_speedup_vs_compile
        parts = [f"{self.task}: best {s:.2f}x over eager" if s else f"{self.task}: correct (speedup not timed)"]
        if c:
            parts.append(f"{c:.2f}x over torch.compile")
        parts.append(f"step {self.best_step}, {self.evaluations} evaluation(s), {self.coder}")
        return ", ".join(parts)
