"""The chat agent's tools: thin LangChain tools over one `RunManager`.

Each answers with compact JSON or short text an LLM can relay; a mistake a person can fix (a pasted task that
is not one, an unknown run or direction) comes back as an answer starting with "error:" that says how to fix
it, so the model can tell the person instead of the turn failing. Progress events of a run go to the chat's
stream (LangGraph custom events) while the tool works.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from .runs import ChatInputError, RunManager, step_dict


def _stream_sink() -> Callable[[dict[str, Any]], None] | None:
    """The chat graph's custom stream, when the tool runs inside one (else None)."""
    try:
        from langgraph.config import get_stream_writer

        writer = get_stream_writer()
    except Exception:  # noqa: BLE001 - called outside a graph (a direct call, a slash command)
        return None
    return lambda ev: writer({"htam_run_event": ev})


def _answer(fn: Callable[[], Any]) -> str:
    try:
        out = fn()
    except (ChatInputError, ValueError, FileNotFoundError) as exc:
        return f"error: {exc}"
    return out if isinstance(out, str) else json.dumps(out, default=str)


def make_chat_tools(manager: RunManager) -> list[BaseTool]:
    def optimize(task: str, backend: str | None = None, steps: int | None = None, candidates: int | None = None,
                 interactive: bool = False, name: str | None = None) -> str:
        """Optimize a PyTorch operator: `task` is a KernelBench task file path or pasted PyTorch code (a `Model`
        class with forward(), `get_inputs()`, `get_init_inputs()`). backend: cuda, triton or cpp. steps: the
        budget. interactive=True pauses before each generation so the person can steer (then use steer_run).
        name: for pasted code, a short snake_case name of what it computes (e.g. rms_norm), used for the run.
        Returns the outcome (speedups over eager and torch.compile, advice) or the pause, and the step table
        (a step's `asked` differs from its `direction` when the coder applied another move; `why` says why)."""
        return _answer(lambda: manager.optimize(task, backend=backend, steps=steps, candidates=candidates,
                                                interactive=interactive, on_event=_stream_sink(), name=name))

    def steer_run(action: str, run_id: str | None = None, direction: str | None = None,
                  code: str | None = None) -> str:
        """Answer a paused run: action accept (go on as planned), direction (take `direction`, one of the
        pause's directions, e.g. parallel_mapping for a warp-per-row mapping), code (evaluate the person's own
        ModelNew `code` as this step's candidate) or stop. Runs to the next pause or the end."""
        return _answer(lambda: manager.steer(run_id, action, direction=direction, code=code,
                                             on_event=_stream_sink()))

    def resume_run(run_id: str | None = None) -> str:
        """Continue an interrupted run (its process was killed or the page closed) from its checkpoint;
        finished steps are not repeated. Default: the latest run."""
        def go() -> Any:
            rid = run_id or manager.current or next((r["run_id"] for r in manager.runs()), None)
            return manager.resume(rid, on_event=_stream_sink())
        return _answer(go)

    def evaluate_candidate(task: str, code: str, backend: str | None = None) -> str:
        """Compile, verify and time one candidate (`code` defines ModelNew) against `task` (path or pasted
        source). Returns the verdict and an eval id for explain_verdict."""
        return _answer(lambda: manager.evaluate(task, code, backend))

    def explain_verdict(run_id: str | None = None, candidate: int | None = None) -> str:
        """Explain a verdict in plain words (what failed, on which trial, what to change): a run's candidate
        by its number (default: the run's last rejected one), or an eval id from evaluate_candidate."""
        return _answer(lambda: manager.explain(run_id, candidate))

    def show_run(run_id: str | None = None) -> str:
        """A run's state and step table (direction, strategies, each candidate's number and verdict, speedup),
        what it waits for if paused, and its best kernel's figures. Default: the current run."""
        def go() -> Any:
            v = manager.view(run_id)
            return {**v.summary(), "state": v.state(v.run_id == manager.active), "pause": v.pause,
                    "now": v.last_activity(),
                    "steps": [step_dict(s) for s in v.steps]}
        return _answer(go)

    def list_runs(limit: int = 10) -> str:
        """Recent runs, newest first: task, backend, coder, state, steps, best speedups."""
        return _answer(lambda: manager.runs()[:limit])

    def compare_runs(run_ids: list[str]) -> str:
        """Compare runs side by side (e.g. today's with yesterday's): best speedups, roofline, steps, coder."""
        def go() -> Any:
            rows = [manager.view(r).summary() for r in run_ids]
            best = max(rows, key=lambda r: r["best_speedup_vs_eager"] or 0.0) if rows else None
            return {"runs": rows, "fastest": best and best["run_id"]}
        return _answer(go)

    def query_memory(what: str = "all", op_class: str | None = None, backend: str | None = None,
                     direction: str | None = None) -> str:
        """What the HTAM memory has learned: what = directions (ranked priors for an operator class, how often
        taken and improved), transitions (direction -> direction with success rates and gains), learned
        (strategy cards from accepted kernels), strategies, or all. op_class e.g. normalization, reduction,
        elementwise, matmul."""
        from .memory_view import query_memory as q

        return _answer(lambda: q(manager.base, what, op_class, backend, direction))

    def export_kernel(run_id: str | None = None, path: str | None = None) -> str:
        """Write the run's best kernel (a drop-in ModelNew file) to `path` (default ./<task>_best_kernel.py).
        Tell the person the path, and any `warning` (e.g. the kernel is slower than eager PyTorch)."""
        return _answer(lambda: manager.export(run_id, path))

    fns = (optimize, steer_run, resume_run, evaluate_candidate, explain_verdict, show_run, list_runs,
           compare_runs, query_memory, export_kernel)
    return [StructuredTool.from_function(fn, name=fn.__name__, description=" ".join((fn.__doc__ or "").split()))
            for fn in fns]
