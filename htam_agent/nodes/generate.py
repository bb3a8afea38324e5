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
    SpaceExhausted,
    StrategyBrief,
    TriedCandidate,
    UnsupportedTask,
)
from htam_agent.coder.exemplar.common import MAX_VARIANTS
from htam_agent.context import RunContext
from htam_agent.evaluation.parent.readout import Readout
from htam_agent.memory.cards import plan_text
from htam_agent.run.artifacts import RunArtifacts
from htam_agent.run.resources import coder_for, gateway_for
from htam_agent.state import AgentState, CandidateRecord, measured_by_step

#: prefix of the error of a coder that cannot handle the task at all (the run stops: it will not change)
UNSUPPORTED = "unsupported task"
#: prefix of the error of a deterministic coder that has written everything it can for the task (the run stops)
EXHAUSTED = "space exhausted"


class GenerationTask(TypedDict):
    """The payload of one Send: everything a branch needs (branches do not see the graph state). Every key is
    set, by `generation_task`, the only place one is built (review's fan-out and evaluate's repairs)."""

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


#: the newest attempts whose code travels with every generation branch (the exemplar coder reads its knobs from
#: it, so all of its space must fit): bounds what each `Send` adds to the checkpoint on long LLM runs
TRIED_WITH_CODE = MAX_VARIANTS


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


def generation_task(state: AgentState, variant: int, *, repair: int = 0, failed_code: str | None = None,
                    feedback: str = "", given_code: str | None = None) -> GenerationTask:
    """The payload of the branch that writes `variant` of the step (its `repair`-th attempt), from the state."""
    best = state.get("best") or {}
    direction = state.get("direction") or {}
    return GenerationTask(
        run_id=state["run_id"], task_path=state["task_path"], task_source=state["task_source"],
        task_name=state["task_name"], op_class=(state.get("analysis") or {}).get("op_class", "other"),
        step=state["step"], variant=variant, repair=repair, direction=direction.get("id"),
        direction_reason=direction.get("reason", ""), strategies=state.get("strategies", []),
        notes=state.get("notes", []), best_code=best.get("code"), best_verdict=best.get("verdict"),
        failed_code=failed_code, feedback=feedback, given_code=given_code,
        portfolio=direction.get("portfolio", []), advice=direction.get("advice", []), tried=tried_payload(state),
    )


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
    except SpaceExhausted as exc:
        return CodeProposal(code=None, coder=getattr(coder, "name", "?"), uses_llm=coder.uses_llm,
                            error=f"{EXHAUSTED}: {exc}")


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
