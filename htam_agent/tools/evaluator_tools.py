"""The evaluator as LangChain tools for an outside agent: compile, verify, benchmark.

Thin wrappers over one `EvaluationGateway` (local or replayed evaluation, the device lock): each tool answers
with a short text an LLM can act on (the verdict's one-line reason and figures) and carries the full verdict as
the tool message's artifact. The graph itself calls the gateway directly, not these tools.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field


class KernelInput(BaseModel):
    task_path: str = Field(description="path of the KernelBench task file (Model, get_inputs, get_init_inputs)")
    code: str = Field(description="full candidate source defining ModelNew")
    name: str = Field(default="", description="a label for the candidate (artifact names, logs)")


def summary(verdict: dict[str, Any]) -> str:
    from htam_agent.evaluation.parent.readout import Readout

    return Readout(verdict).tool_answer()


def make_evaluator_tools(gateway: Any, mode: str | None = None) -> list[BaseTool]:
    """compile_kernel, verify_kernel, benchmark_kernel over one gateway (an Evaluator is wrapped in one; `mode`
    local | replay | auto applies only then, default auto)."""
    from htam_agent.evaluation.parent.candidate import Candidate
    from htam_agent.evaluation.parent.gateway import EvaluationGateway, resolve_mode

    if not isinstance(gateway, EvaluationGateway):
        gateway = EvaluationGateway(gateway, resolve_mode(mode or "auto", gateway.options.backend))

    def _cand(task_path: str, code: str, name: str) -> Candidate:
        return Candidate.of(task_path, code, name=name or "")  # a missing task file: CandidateError, a ValueError

    def compile_kernel(task_path: str, code: str, name: str = "") -> tuple[str, dict[str, Any]]:
        """Compile a candidate (no run): compiler errors come back with their first diagnostic."""
        v = gateway.compile(_cand(task_path, code, name))
        return summary(v), v

    def verify_kernel(task_path: str, code: str, name: str = "") -> tuple[str, dict[str, Any]]:
        """Check a candidate's correctness and the anti-cheat rules, without timing it."""
        v = gateway.verify(_cand(task_path, code, name))
        return summary(v), v

    def benchmark_kernel(task_path: str, code: str, name: str = "") -> tuple[str, dict[str, Any]]:
        """Full verdict: compile, verify, time against eager and torch.compile, roofline fraction."""
        v = gateway.benchmark(_cand(task_path, code, name))
        return summary(v), v

    return [StructuredTool.from_function(fn, name=fn.__name__, description=fn.__doc__, args_schema=KernelInput,
                                         response_format="content_and_artifact")
            for fn in (compile_kernel, verify_kernel, benchmark_kernel)]
