"""The evaluator as LangChain tools: compile, verify, benchmark (and the roofline profile inside a verdict).

The graph's evaluate node runs them through a `ToolNode`; an outside LangChain agent can bind them too. Each
tool answers with a short text an LLM can act on (the verdict's one-line reason) and carries the full verdict
as the tool message's artifact. Timing holds a per-device lock: candidates compile in parallel but are timed
one at a time on each GPU, even when several graphs share a process.

In replay mode (a GPU backend on a machine without a GPU) verdicts come only from the verdict store, where a
GPU host's batch put them (`htam verdicts import`); a candidate missing there is reported as not evaluated,
never guessed.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

_device_locks: dict[int, threading.Lock] = {}
_locks_guard = threading.Lock()


def device_lock(index: int) -> threading.Lock:
    with _locks_guard:
        return _device_locks.setdefault(index, threading.Lock())


class KernelInput(BaseModel):
    task_path: str = Field(description="path of the KernelBench task file (Model, get_inputs, get_init_inputs)")
    code: str = Field(description="full candidate source defining ModelNew")
    name: str = Field(default="", description="a label for the candidate (artifact names, logs)")


def not_evaluated(task: str, backend: str, why: str) -> dict[str, Any]:
    from htam_agent.evaluation.verdict import finalize, new_verdict

    v = new_verdict(task, backend)
    v["status"] = "error"
    v["reason"] = why
    v["not_evaluated"] = True
    return finalize(v)


def summary(verdict: dict[str, Any]) -> str:
    keep = {k: verdict.get(k) for k in ("status", "accepted", "reason", "speedup_vs_eager", "speedup_vs_compile")}
    roof = verdict.get("roofline") or {}
    if roof:
        keep["roofline_fraction"] = roof.get("fraction")
        keep["bound"] = roof.get("bound")
    keep["flags"] = [f["name"] for f in verdict.get("flags", [])]
    return json.dumps(keep, default=str)


def make_evaluator_tools(evaluator: Any, mode: str = "local") -> list[BaseTool]:
    """compile_kernel, verify_kernel, benchmark_kernel bound to one Evaluator (htam_agent.evaluation)."""
    from dataclasses import replace

    from htam_agent.evaluation.runner import Candidate, Evaluator

    backend = evaluator.options.backend
    verifier = Evaluator(replace(evaluator.options, timing=False, baselines=()), evaluator.store, evaluator.device)

    def _cand(task_path: str, code: str, name: str) -> Any:
        return Candidate(task_path=task_path, source=code, name=name or "")

    def _replayed(ev: Any, cand: Any) -> dict[str, Any]:
        hit = ev.store.get(ev.key(cand)) if ev.store is not None else None
        if hit is None:
            return not_evaluated(cand.name, backend, (
                f"no {backend} device on this machine and no stored verdict for this candidate "
                f"(key {ev.key(cand)[:12]}); evaluate it on a GPU host with `python -m htam_agent.evaluation "
                f"batch` and import the verdicts with `htam verdicts import`"))
        return {**hit, "cached": True}

    def compile_kernel(task_path: str, code: str, name: str = "") -> tuple[str, dict[str, Any]]:
        """Compile a candidate (no run): compiler errors come back with their first diagnostic."""
        cand = _cand(task_path, code, name)
        if mode == "replay":
            v = _replayed(evaluator, cand)
        else:
            v = evaluator.compile_only(cand)
        return summary(v), v

    def verify_kernel(task_path: str, code: str, name: str = "") -> tuple[str, dict[str, Any]]:
        """Check a candidate's correctness and the anti-cheat rules, without timing it."""
        cand = _cand(task_path, code, name)
        v = _replayed(evaluator, cand) if mode == "replay" else verifier.evaluate(cand)
        return summary(v), v

    def benchmark_kernel(task_path: str, code: str, name: str = "") -> tuple[str, dict[str, Any]]:
        """Full verdict: compile, verify, time against eager and torch.compile, roofline fraction."""
        cand = _cand(task_path, code, name)
        if mode == "replay":
            v = _replayed(evaluator, cand)
        else:
            with device_lock(evaluator.options.device_index):
                v = evaluator.evaluate(cand)
        return summary(v), v

    tools = []
    for fn in (compile_kernel, verify_kernel, benchmark_kernel):
        tools.append(StructuredTool.from_function(fn, name=fn.__name__, description=fn.__doc__,
                                                  args_schema=KernelInput, response_format="content_and_artifact"))
    return tools
