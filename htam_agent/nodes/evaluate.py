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
from htam_agent.run.artifacts import RunArtifacts
from htam_agent.run.resources import gateway_for
from htam_agent.state import (
    AgentState,
    CandidateRecord,
    evaluations_left,
    latest_per_variant,
    measured_by_step,
    step_candidates,
)

_REPAIRABLE = {"compile_error", "runtime_error", "incorrect", "invalid_candidate", "no_code"}


def evaluate(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    step = state.get("step", 0)
    art = RunArtifacts(ctx.runs_path(), state["run_id"])
    write = get_stream_writer()
    pending = [c for c in step_candidates(state) if c.get("verdict") is None]
    gateway = gateway_for(ctx)
    updated: list[CandidateRecord] = []
    for cand in pending:
        compiled = cand.get("compile")
        if not cand.get("code"):
            verdict = gateway.no_code(state.get("task_name", ""), cand.get("error") or "")
        elif compiled and Readout(compiled).status != "accepted":
            verdict = compiled
        else:
            from htam_agent.evaluation.parent.candidate import Candidate

            name = f"{state.get('task_name', 'task')}_s{step}_v{cand['variant']}_r{cand['repair']}"
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
        sends.append(Send("generate", {
            **base_payload(state), "variant": variant, "repair": last.get("repair", 0) + 1,
            "failed_code": last.get("code"), "feedback": feedback_of(verdict),
        }))
    left = evaluations_left(state, ctx.max_evaluations)
    if left is not None:
        sends = sends[:left]
    return sends or "update_memory"


def feedback_of(verdict: dict[str, Any]) -> str:

    return Readout(verdict).feedback()


#: the newest attempts whose code travels with every generation branch (the exemplar coder reads its knobs from
#: it; its spaces hold at most 17 variants): bounds what each `Send` adds to the checkpoint on long LLM runs
TRIED_WITH_CODE = 24


def tried_payload(state: AgentState) -> list[dict[str, Any]]:
    """This task's candidates of finished steps (each variant's last repair, with a real verdict), oldest first:
    what the coders are told was already measured, so that none writes it again (the code of the newest
    TRIED_WITH_CODE only)."""

    out = []
    for step, measured in measured_by_step(state).items():
        for c in measured:
            if not c.get("code"):
                continue
            r = Readout(c["verdict"])
            out.append({"step": step, "direction": c.get("direction"), "strategies": list(c.get("strategy_ids") or []),
                        "accepted": r.accepted, "speedup_vs_eager": r.speedup_vs_eager, "outcome": r.outcome(),
                        "code": c["code"]})
    for old in out[:-TRIED_WITH_CODE]:
        old["code"] = ""
    return out


def base_payload(state: AgentState) -> dict[str, Any]:
    best = state.get("best") or {}
    direction = state.get("direction") or {}
    return {
        "run_id": state["run_id"], "task_path": state["task_path"], "task_source": state["task_source"],
        "task_name": state.get("task_name", ""), "op_class": (state.get("analysis") or {}).get("op_class", "other"),
        "step": state.get("step", 0), "direction": direction.get("id"),
        "direction_reason": direction.get("reason", ""), "strategies": state.get("strategies", []),
        "notes": state.get("notes", []), "best_code": best.get("code"), "best_verdict": best.get("verdict"),
        "failed_code": None, "feedback": "", "given_code": None, "repair": 0,
        "portfolio": direction.get("portfolio", []), "advice": direction.get("advice", []),
        "tried": tried_payload(state),
    }


def fan_out(state: AgentState, runtime: Runtime[RunContext]) -> list[Send] | str:
    """After review: one generation branch per candidate of the step (or the person's code, or stop)."""
    ctx = runtime.context
    if state.get("stop_reason"):
        return "finalize"
    human = state.get("human") or {}
    if human.get("action") == "code":
        return [Send("generate", {**base_payload(state), "variant": 0, "given_code": human["code"]})]
    n = ctx.candidates
    left = evaluations_left(state, ctx.max_evaluations)
    if left is not None:
        n = min(n, left)
    if n <= 0:
        return "finalize"
    return [Send("generate", {**base_payload(state), "variant": i}) for i in range(n)]
