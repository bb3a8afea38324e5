"""Evaluate the step's new candidates through the evaluation gateway, timed one at a time per device.

Candidates that failed to compile in their branch keep that verdict; the rest are benchmarked against the task
source the run started with (never the file read again). Then
`route_after_evaluate` sends failed candidates back to generation with the evaluator's reason (at most
`max_repairs` times each, and only while the step has no accepted candidate), or moves on to the memory.
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime
from langgraph.types import Send

from htam_agent.context import RunContext
from htam_agent.evaluation.parent.readout import Readout
from htam_agent.nodes.generate import generation_task
from htam_agent.run.artifacts import RunArtifacts
from htam_agent.run.resources import gateway_for
from htam_agent.state import (
    AgentState,
    CandidateRecord,
    evaluations_left,
    latest_per_variant,
    step_candidates,
)

_REPAIRABLE = {"compile_error", "runtime_error", "incorrect", "invalid_candidate", "no_code"}


def evaluate(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    step = state["step"]
    art = RunArtifacts(ctx.runs_path(), state["run_id"])
    write = get_stream_writer()
    pending = [c for c in step_candidates(state) if c.get("verdict") is None]
    gateway = gateway_for(ctx)
    updated: list[CandidateRecord] = []
    for cand in pending:
        compiled = cand.get("compile")
        if not cand.get("code"):
            verdict = gateway.no_code(state["task_name"], cand.get("error") or "")
        elif compiled and Readout(compiled).status != "accepted":
            verdict = compiled
        else:
            from htam_agent.evaluation.parent.candidate import Candidate

            name = f"{state['task_name']}_s{step}_v{cand['variant']}_r{cand['repair']}"
            verdict = gateway.benchmark(Candidate.of(state["task_path"], cand["code"], name=name,
                                                     task_source=state["task_source"]))
        art.write_verdict(step, cand["variant"], cand["repair"], verdict)
        done = dict(cand)
        done["verdict"] = verdict
        done["compile"] = None  # the full verdict supersedes it; keeps the checkpoint small
        updated.append(done)  # type: ignore[arg-type]
        read = Readout(verdict)
        write({"event": "verdict", "step": step, "variant": cand["variant"], "repair": cand["repair"],
               "status": read.status, "speedup_vs_eager": read.speedup_vs_eager, "reason": read.reason[:300]})
    return {"candidates": updated}


def route_after_evaluate(state: AgentState, runtime: Runtime[RunContext]) -> list[Send] | str:
    ctx = runtime.context
    cands = step_candidates(state)
    if any(Readout(c.get("verdict")).accepted for c in cands):
        return "update_memory"
    sends: list[Send] = []
    for variant, last in sorted(latest_per_variant(cands).items()):
        verdict = last.get("verdict") or {}
        read = Readout(verdict)
        status = "no_code" if read.no_code else read.status
        if status not in _REPAIRABLE or last.get("repair", 0) >= ctx.max_repairs:
            continue
        if read.no_code and not last.get("uses_llm"):
            continue  # a deterministic coder that wrote nothing will write nothing again
        sends.append(Send("generate", generation_task(state, variant, repair=last.get("repair", 0) + 1,
                                                      failed_code=last.get("code"), feedback=feedback_of(verdict))))
    left = evaluations_left(state, ctx.max_evaluations)
    if left is not None:
        sends = sends[:left]
    return sends or "update_memory"


def feedback_of(verdict: dict[str, Any]) -> str:

    return Readout(verdict).feedback()
