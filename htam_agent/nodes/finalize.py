"""Finish a run: the best kernel as a ready-to-use file, report.md with plots, result.json."""

from __future__ import annotations

import json
import time
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from htam_agent.context import RunContext
from htam_agent.evaluation.parent.readout import Readout
from htam_agent.run.artifacts import RunArtifacts
from htam_agent.run.result import RunResult
from htam_agent.state import AgentState


def method_name(ctx: RunContext) -> str:
    parts = [f"memory={ctx.memory_mode}"]
    if ctx.memory_mode == "htam" and ctx.direction_policy != "htam":
        parts.append(f"policy={ctx.direction_policy}")
    if not ctx.use_strategies:
        parts.append("no-strategies")
    if not ctx.use_transitions:
        parts.append("no-transitions")
    parts.append(f"steps={ctx.steps}x{ctx.candidates}")
    return ",".join(parts)


def build_result(state: AgentState, ctx: RunContext, art: RunArtifacts, wall: float) -> RunResult:
    cands = state.get("candidates", [])
    best = state.get("best") or {}
    coders = [c.get("coder") for c in cands if c.get("coder") and c.get("coder") != "person"]
    uses_llm = any(c.get("uses_llm") for c in cands)
    steps = [dict(h) for h in state.get("history", [])]  # the step records as they are
    best_path = str(art.root / "best_kernel.py") if best.get("code") else None
    return RunResult(
        run_id=state["run_id"], task=state["task_name"], task_path=state["task_path"], backend=ctx.backend,
        coder=coders[-1] if coders else ("exemplar" if ctx.coder_kind == "exemplar" else str(ctx.model)),
        uses_llm=uses_llm, method=method_name(ctx), correct=bool(best), best_speedup_vs_eager=best.get(
            "speedup_vs_eager"), best_speedup_vs_compile=best.get("speedup_vs_compile"),
        best_roofline_fraction=best.get("roofline_fraction"), best_step=best.get("step"), best_code_path=best_path,
        artifact_dir=str(art.root), evaluations=sum(1 for c in cands if c.get("verdict") is not None),
        llm_calls=sum(c.get("llm_calls", 0) for c in cands), input_tokens=sum(c.get("input_tokens", 0) for c in cands),
        output_tokens=sum(c.get("output_tokens", 0) for c in cands), wall_seconds=round(wall, 3),
        stop_reason=state.get("stop_reason") or "budget", steps=steps,
    )


def finalize(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    art = RunArtifacts(ctx.runs_path(), state["run_id"])
    try:
        started = art.read_run().get("started", time.time())
    except FileNotFoundError:
        started = time.time()
    result = build_result(state, ctx, art, time.time() - started)
    best = state.get("best") or {}
    if best.get("code"):
        read = Readout(best.get("verdict"))
        header = (f"# Best kernel of htam run {result.run_id} for {result.task} ({ctx.backend}), step {best.get('step')}:"
                  f" {read.speedup_vs_eager}x over eager on {read.device_label}.\n"
                  f"# Written by {'LLM ' + result.coder if result.uses_llm else 'the htam exemplar coder (no LLM)'};"
                  " accepted by the htam evaluator. Use it as a drop-in ModelNew.\n")
        art.write_best(header + best["code"])
    from htam_agent.run.report import write_report

    mem_dirs: list[str] = []
    try:
        from htam_agent.run.resources import memory_for

        mem = memory_for(ctx)
        mem_dirs = mem.directions if mem else []
    except Exception:  # noqa: BLE001 - the report can draw the path from the history alone
        pass
    write_report(art.root, result.as_dict(), [dict(h) for h in state.get("history", [])], mem_dirs)
    art.write_text("result.json", json.dumps(result.as_dict(), indent=2, default=str) + "\n")
    get_stream_writer()({"event": "done", "headline": result.headline(), "artifact_dir": str(art.root)})
    return {"stop_reason": result.stop_reason}
