"""Human in the loop: pause before generation so a person can accept, change the direction or write the code.

Only when the context says `interactive`. The pause is LangGraph's `interrupt()`: the run is checkpointed
and the caller resumes it with `Command(resume=answer)`, where answer is one of
    {"action": "accept"}
    {"action": "direction", "direction": "<direction id>"}     (strategies are retrieved again for it)
    {"action": "code", "code": "<candidate source>"}            (evaluated instead of generating)
    {"action": "stop"}                                          (finish the run now)
A bare string is read as a direction id, or as code when it defines ModelNew.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Send, interrupt

from htam_agent.context import RunContext
from htam_agent.nodes._memory_state import memory_state
from htam_agent.nodes.generate import generation_task
from htam_agent.nodes.retrieve import brief
from htam_agent.run.artifacts import RunArtifacts
from htam_agent.run.resources import memory_for
from htam_agent.state import AgentState, evaluations_left

ACTIONS = ("accept", "direction", "code", "stop")


def _normalize(answer: Any) -> dict[str, Any]:
    if answer is None or answer == "" or answer is True:
        return {"action": "accept"}
    if isinstance(answer, str):
        if "class ModelNew" in answer:
            return {"action": "code", "code": answer}
        if answer.strip().lower() in ACTIONS:
            return {"action": answer.strip().lower()}
        return {"action": "direction", "direction": answer.strip()}
    if isinstance(answer, dict) and answer.get("action") in ACTIONS:
        return answer
    raise ValueError(f"resume value {answer!r} is not understood: pass {{'action': one of {ACTIONS}}} "
                     "with 'direction' or 'code' where needed")


def _record(state: AgentState, ctx: RunContext, direction: dict[str, Any], strategies: list[dict[str, Any]],
            human: dict[str, Any] | None) -> None:
    RunArtifacts(ctx.runs_path(), state["run_id"]).write_direction(state["step"], {
        "direction": direction, "strategies": strategies, "notes": state.get("notes", []),
        "analysis": {k: v for k, v in (state.get("analysis") or {}).items() if k != "ops"}, "person": human})


def review(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    direction = state.get("direction") or {}
    if not ctx.interactive:
        _record(state, ctx, dict(direction), state.get("strategies", []), None)
        return {"human": None}
    mem = memory_for(ctx)
    answer = _normalize(interrupt({
        "step": state["step"],
        "task": state["task_name"],
        "direction": direction.get("id"),
        "reason": direction.get("reason", ""),
        "alternatives": direction.get("alternatives", []),
        "directions": mem.directions if mem else [],
        "strategies": [s["id"] for s in state.get("strategies", [])],
        "best_speedup": (state.get("best") or {}).get("speedup_vs_eager"),
        "how_to_answer": "accept | {'action':'direction','direction':id} | {'action':'code','code':src} | stop",
    }))
    update: dict[str, Any] = {"human": answer}
    if answer["action"] == "direction":
        new = answer.get("direction")
        if mem is None or new not in mem.directions:
            known = ", ".join(mem.directions) if mem else "(no memory in this run)"
            raise ValueError(f"unknown direction {new!r}; choose one of {known}")
        update["direction"] = {"id": new, "reason": "chosen by a person", "score": None,
                               "alternatives": direction.get("alternatives", []), "chosen_by": "person"}
        if ctx.use_strategies:
            hits = mem.retrieve_strategies(new, memory_state(state, ctx), backend=ctx.backend, k=ctx.strategies_k)
            update["strategies"] = [brief(h, ctx.backend) for h in hits]
    elif answer["action"] == "stop":
        update["stop_reason"] = "stopped by a person"
    _record(state, ctx, dict(update.get("direction", direction)), update.get("strategies", state.get("strategies", [])),
            {k: v for k, v in answer.items() if k != "code"} | ({"code_chars": len(answer["code"])}
                                                                 if answer.get("code") else {}))
    return update


def fan_out(state: AgentState, runtime: Runtime[RunContext]) -> list[Send] | str:
    """Review's outgoing edge: one generation branch per candidate of the step (or the person's code, or stop)."""
    ctx = runtime.context
    if state.get("stop_reason"):
        return "finalize"
    human = state.get("human") or {}
    if human.get("action") == "code":
        return [Send("generate", generation_task(state, 0, given_code=human["code"]))]
    n = ctx.candidates
    left = evaluations_left(state, ctx.max_evaluations)
    if left is not None:
        n = min(n, left)
    if n <= 0:
        return "finalize"
    return [Send("generate", generation_task(state, i)) for i in range(n)]
