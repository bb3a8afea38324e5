"""Generate one candidate (a `Send` branch: several run in parallel per step), and compile it right away.

Compiling inside the branch spreads the slow part (nvcc, g++) over the CPU cores while the evaluate node
later times candidates one at a time. The branch writes its prompt, reply and code to the artifact folder;
a reply without usable code becomes a candidate record with the coder's reason instead of code.

Each branch takes its slot of the step's direction portfolio (variant i: slot i), and records what the candidate
applied: the direction and strategies the reply declares when it declares them, else the ones it was given.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from htam_agent.coder.base import (
    CodeProposal,
    CodeRequest,
    DirectionAdvice,
    StrategyBrief,
    TriedCandidate,
    UnsupportedTask,
)
from htam_agent.context import RunContext
from htam_agent.memory.cards import plan_text
from htam_agent.run.artifacts import RunArtifacts
from htam_agent.run.resources import coder_for, gateway_for
from htam_agent.state import CandidateRecord

#: prefix of the error of a coder that cannot handle the task at all (the run stops: it will not change)
UNSUPPORTED = "unsupported task"


class GenerationTask(TypedDict, total=False):
    """The payload of one Send: everything a branch needs (branches do not see the graph state)."""

    run_id: str
    task_path: str
    task_source: str
    task_name: str
    op_class: str
    step: int
    variant: int
    repair: int
    direction: str | None
    direction_reason: str
    strategies: list[dict[str, Any]]
    notes: list[str]
    best_code: str | None
    best_verdict: dict[str, Any] | None
    failed_code: str | None
    feedback: str
    given_code: str | None      # a person's code (interactive): evaluated as it is
    portfolio: list[dict[str, Any]]   # one slot per candidate: {"id": direction, "strategies": [...]}
    advice: list[dict[str, Any]]      # the ranked directions with their evidence
    tried: list[dict[str, Any]]       # this task's earlier candidates (nodes.evaluate.tried_payload)


def assignment(task: GenerationTask) -> tuple[str | None, list[dict[str, Any]]]:
    """This candidate's direction and strategies: its slot of the step's portfolio (variant i takes slot i), or
    the step's single direction when there is no portfolio (flat memory, a person's choice, old checkpoints)."""
    slots = task.get("portfolio") or []
    if slots:
        slot = slots[task.get("variant", 0) % len(slots)]
        return slot.get("id"), list(slot.get("strategies") or [])
    return task.get("direction"), list(task.get("strategies", []))


def _request(task: GenerationTask, backend: str) -> CodeRequest:
    direction, strategies = assignment(task)
    briefs = tuple(StrategyBrief(id=s["id"], title=s.get("title", ""), summary=s.get("summary", ""),
                                 sketch=s.get("sketch", ""), risks=s.get("risks", ""))
                   for s in strategies)
    advice = tuple(DirectionAdvice(id=a["id"], name=a.get("name", ""), evidence=a.get("evidence", ""),
                                   score=a.get("score")) for a in task.get("advice") or [])
    tried = tuple(TriedCandidate(**{**t, "strategies": tuple(t.get("strategies") or ())})
                  for t in task.get("tried") or [])  # the payload's keys are its fields (tried_payload)
    reason = task.get("direction_reason", "") if direction == task.get("direction") else ""
    return CodeRequest(
        task_name=task["task_name"], task_source=task["task_source"], backend=backend,
        op_class=task.get("op_class", "other"), direction=direction,
        direction_reason=reason, strategies=briefs, best_code=task.get("best_code"),
        best_verdict=task.get("best_verdict"), feedback=task.get("feedback", ""),
        failed_code=task.get("failed_code"), repair=task.get("repair", 0), variant=task.get("variant", 0),
        step=task.get("step", 0), notes=tuple(task.get("notes", [])), advice=advice, tried=tried,
    )


def _propose(task: GenerationTask, ctx: RunContext) -> CodeProposal:
    if task.get("given_code"):
        return CodeProposal(code=task["given_code"], coder="person", uses_llm=False,
                            prompt="(code written by a person at the review pause)",
                            strategy_ids=[s["id"] for s in assignment(task)[1]])
    coder = coder_for(ctx)
    try:
        return coder.propose(_request(task, ctx.backend))
    except UnsupportedTask as exc:
        return CodeProposal(code=None, coder=getattr(coder, "name", "?"), uses_llm=coder.uses_llm,
                            error=f"{UNSUPPORTED}: {exc}")


def generate(task: GenerationTask, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    step, variant, repair = task["step"], task.get("variant", 0), task.get("repair", 0)
    write = get_stream_writer()
    write({"event": "generate", "step": step, "variant": variant, "repair": repair})
    proposal = _propose(task, ctx)
    assigned = assignment(task)[0]
    applied = proposal.direction or assigned  # what the reply declares it did wins over what was asked
    plan = proposal.plan or plan_text(proposal.reply)
    art = RunArtifacts(ctx.runs_path(), task["run_id"])
    meta = {"coder": proposal.coder, "uses_llm": proposal.uses_llm, "strategy_ids": proposal.strategy_ids,
            "error": proposal.error, "llm_calls": proposal.llm_calls, "input_tokens": proposal.input_tokens,
            "output_tokens": proposal.output_tokens, "direction": applied, "assigned_direction": assigned,
            "declared": proposal.declared, "feedback": task.get("feedback", "")}
    code_path = art.write_candidate(step, variant, repair, prompt=proposal.prompt, reply=proposal.reply,
                                    code=proposal.code, meta=meta)
    record: CandidateRecord = {
        "step": step, "variant": variant, "repair": repair, "code": proposal.code,
        "code_path": str(code_path) if code_path else None, "coder": proposal.coder,
        "uses_llm": proposal.uses_llm, "strategy_ids": list(proposal.strategy_ids), "error": proposal.error,
        "llm_calls": proposal.llm_calls, "input_tokens": proposal.input_tokens,
        "output_tokens": proposal.output_tokens, "compile": None, "verdict": None,
        "edited_by_person": bool(task.get("given_code")),
        "direction": applied, "assigned_direction": assigned, "declared": proposal.declared, "plan": plan,
    }
    gateway = gateway_for(ctx)
    if proposal.code is not None and gateway.local:  # replayed verdicts need no build
        from htam_agent.evaluation.parent.candidate import Candidate

        name = f"{task['task_name']}_s{step}_v{variant}_r{repair}"
        compiled = gateway.compile(Candidate.of(task["task_path"], proposal.code, name=name,
                                                task_source=task["task_source"]))
        record["compile"] = compiled
        art.write_verdict(step, variant, repair, compiled, name="compile.json")
    write({"event": "generated", "step": step, "variant": variant, "repair": repair,
           "direction": applied, "declared": proposal.declared,
           "has_code": proposal.code is not None, "error": proposal.error[:200],
           "compile": (record["compile"] or {}).get("status")})
    return {"candidates": [record]}
