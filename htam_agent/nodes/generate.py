"""Generate one candidate (a `Send` branch: several run in parallel per step), and compile it right away.

Compiling inside the branch spreads the slow part (nvcc, g++) over the CPU cores while the evaluate node
later times candidates one at a time. The branch writes its prompt, reply and code to the artifact folder;
a reply without usable code becomes a candidate record with the coder's reason instead of code.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from htam_agent.artifacts import RunArtifacts
from htam_agent.coder.base import CodeProposal, CodeRequest, StrategyBrief, UnsupportedTask
from htam_agent.context import RunContext
from htam_agent.resources import coder_for, evaluation_mode, evaluator_for
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


def _request(task: GenerationTask, backend: str) -> CodeRequest:
    briefs = tuple(StrategyBrief(id=s["id"], title=s.get("title", ""), summary=s.get("summary", ""),
                                 sketch=s.get("sketch", ""), risks=s.get("risks", ""))
                   for s in task.get("strategies", []))
    return CodeRequest(
        task_name=task["task_name"], task_source=task["task_source"], backend=backend,
        op_class=task.get("op_class", "other"), direction=task.get("direction"),
        direction_reason=task.get("direction_reason", ""), strategies=briefs, best_code=task.get("best_code"),
        best_verdict=task.get("best_verdict"), feedback=task.get("feedback", ""),
        failed_code=task.get("failed_code"), repair=task.get("repair", 0), variant=task.get("variant", 0),
        step=task.get("step", 0), notes=tuple(task.get("notes", [])),
    )


def _propose(task: GenerationTask, ctx: RunContext) -> CodeProposal:
    if task.get("given_code"):
        return CodeProposal(code=task["given_code"], coder="person", uses_llm=False,
                            prompt="(code written by a person at the review pause)",
                            strategy_ids=[s["id"] for s in task.get("strategies", [])])
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
    art = RunArtifacts(ctx.runs_path(), task["run_id"])
    meta = {"coder": proposal.coder, "uses_llm": proposal.uses_llm, "strategy_ids": proposal.strategy_ids,
            "error": proposal.error, "llm_calls": proposal.llm_calls, "input_tokens": proposal.input_tokens,
            "output_tokens": proposal.output_tokens, "direction": task.get("direction"),
            "feedback": task.get("feedback", "")}
    code_path = art.write_candidate(step, variant, repair, prompt=proposal.prompt, reply=proposal.reply,
                                    code=proposal.code, meta=meta)
    record: CandidateRecord = {
        "step": step, "variant": variant, "repair": repair, "code": proposal.code,
        "code_path": str(code_path) if code_path else None, "coder": proposal.coder,
        "uses_llm": proposal.uses_llm, "strategy_ids": list(proposal.strategy_ids), "error": proposal.error,
        "llm_calls": proposal.llm_calls, "input_tokens": proposal.input_tokens,
        "output_tokens": proposal.output_tokens, "compile": None, "verdict": None,
        "edited_by_person": bool(task.get("given_code")),
    }
    if proposal.code is not None and evaluation_mode(ctx) == "local":
        from htam_agent.evaluation.runner import Candidate

        name = f"{task['task_name']}_s{step}_v{variant}_r{repair}"
        compiled = evaluator_for(ctx).compile_only(Candidate(task_path=task["task_path"], source=proposal.code,
                                                             name=name, task_source=task["task_source"]))
        record["compile"] = compiled
        art.write_verdict(step, variant, repair, compiled, name="compile.json")
    write({"event": "generated", "step": step, "variant": variant, "repair": repair,
           "has_code": proposal.code is not None, "error": proposal.error[:200],
           "compile": (record["compile"] or {}).get("status")})
    return {"candidates": [record]}
