"""The agent as one LangChain tool, `optimize_kernel`, for any LangChain agent ("make this kernel faster").

The tool runs a whole optimization (minutes to hours on real tasks) and answers with a compact JSON result:
the headline, the outcome (`faster`, `faster_than_eager_only`, `not_faster`, `untimed`, `no_correct_kernel`)
with its advice (use the kernel, use torch.compile, keep PyTorch) and the roofline's reason when it explains
a result that beat nothing, the speedups, the path of the best correct kernel and its source, and one line
per step. A correct kernel is not necessarily a faster one: the calling agent reads `beat_eager` and
`advice`. The task can be a path or the task's Python source (written to the runs folder, so the run stays
reproducible).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from htam_agent.backend_registry import BACKENDS, choices
from htam_agent.context import RunContext

MAX_CODE_CHARS = 20_000


class OptimizeKernelInput(BaseModel):
    task: str = Field(description="path of a KernelBench task file, or its Python source (a `Model` class with "
                                  "`get_inputs` and `get_init_inputs`)")
    backend: Literal[BACKENDS] | None = Field(  # type: ignore[valid-type]  # the registry's names
        default=None, description=f"kernel language: {choices(', ')}; default from the settings")
    steps: int | None = Field(default=None, ge=1, le=100, description="optimization steps (the budget)")
    candidates: int | None = Field(default=None, ge=1, le=16, description="candidates generated per step")


def _task_file(task: str, ctx: RunContext) -> Path:
    if "class Model" in task and "\n" in task:
        digest = hashlib.sha256(task.encode()).hexdigest()[:16]
        path = ctx.runs_path() / "tool_tasks" / f"task_{digest}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(task)
        return path
    path = Path(task).expanduser()
    if not path.is_file():
        raise ValueError(f"task {task[:80]!r} is neither an existing file nor Python source defining "
                         "`class Model`; pass a KernelBench task path or its source")
    return path


def compact(result: Any) -> dict[str, Any]:
    code = ""
    if result.best_code_path and Path(result.best_code_path).is_file():
        code = Path(result.best_code_path).read_text()[:MAX_CODE_CHARS]
    outcome = result.conclusion()
    return {
        "headline": result.headline(), "outcome": outcome.kind, "beat_eager": outcome.beat_eager,
        "advice": outcome.advice, "why": outcome.why,
        "eager_roofline_fraction": outcome.eager_roofline_fraction,
        "compile_roofline_fraction": outcome.compile_roofline_fraction,
        "correct": result.correct, "run_id": result.run_id,
        "speedup_vs_eager": result.best_speedup_vs_eager, "speedup_vs_compile": result.best_speedup_vs_compile,
        "roofline_fraction": result.best_roofline_fraction, "best_kernel_path": result.best_code_path,
        "best_kernel": code, "artifact_dir": result.artifact_dir, "coder": result.coder, "uses_llm": result.uses_llm,
        "evaluations": result.evaluations, "llm_calls": result.llm_calls,
        "steps": [f"{s.get('step')}: {s.get('direction') or '-'} -> {s.get('status')}"
                  + (f" {s['speedup_vs_eager']:.2f}x" if s.get("speedup_vs_eager") else "") for s in result.steps],
    }


def make_optimize_tool(ctx: RunContext | None = None, **injected: Any) -> BaseTool:
    """`optimize_kernel` bound to base settings; `injected` goes to run_optimization (chat_model, memory...)."""
    base = ctx or RunContext.from_env()

    def optimize_kernel(task: str, backend: str | None = None, steps: int | None = None,
                        candidates: int | None = None) -> str:
        """Search for a faster hand-written kernel (CUDA, Triton or CPU C++) for a PyTorch operator given in
        KernelBench format; returns the best verified kernel, its speedups over eager PyTorch and torch.compile,
        and whether it beat them: `beat_eager` and `advice` say to use the kernel, use torch.compile or keep
        PyTorch (with the roofline's reason in `why` when PyTorch is already near the hardware's limit)."""
        from htam_agent.agent import run_optimization

        changes = {k: v for k, v in {"backend": backend, "steps": steps, "candidates": candidates}.items()
                   if v is not None}
        run_ctx = base.with_(**changes) if changes else base
        result = run_optimization(_task_file(task, run_ctx), run_ctx, **injected)
        return json.dumps(compact(result), default=str)

    return StructuredTool.from_function(optimize_kernel, name="optimize_kernel", args_schema=OptimizeKernelInput,
                                        description=" ".join((optimize_kernel.__doc__ or "").split()))
