"""Close a step: keep the best candidate, record the transition in the memory, decide whether to go on.

The memory learns from real verdicts only: a candidate that was never evaluated (replay mode without a stored
verdict) is not recorded as a failure. Recording uses a uid made of the run id and the step, so a step
re-run after a resume does not count twice.
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from htam_agent.context import RunContext
from htam_agent.nodes._memory_state import history_steps, memory_state, memory_status, roofline_fraction
from htam_agent.nodes.generate import UNSUPPORTED
from htam_agent.resources import memory_for
from htam_agent.state import AgentState, Best, StepRecord, evaluations_used, step_candidates


def _speed(c: dict[str, Any]) -> float:
    return (c.get("verdict") or {}).get("speedup_vs_eager") or 0.0


def update_memory(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    step = state.get("step", 0)
    cands = step_candidates(state)
    accepted = [c for c in cands if (c.get("verdict") or {}).get("accepted")]
    chosen = max(accepted, key=_speed) if accepted else (max(cands, key=lambda c: (c.get("repair", 0),
                                                                                   -c.get("variant", 0)))
                                                          if cands else None)
    verdict = (chosen or {}).get("verdict") or {}
    direction = state.get("direction") or {}
    strategy_ids = list(dict.fromkeys(s for c in cands for s in c.get("strategy_ids", [])))
    prev_best = state.get("best")
    update: dict[str, Any] = {}

    improved = False
    if accepted and chosen is not None:
        speed = verdict.get("speedup_vs_eager")
        old = (prev_best or {}).get("speedup_vs_eager")
        if prev_best is None or (speed is not None and (old is None or speed > old)):
            improved = True
            update["best"] = Best(step=step, variant=chosen.get("variant", 0), code=chosen["code"] or "",
                                  code_path=chosen.get("code_path") or "", verdict=verdict,
                                  speedup_vs_eager=speed, speedup_vs_compile=verdict.get("speedup_vs_compile"),
                                  roofline_fraction=roofline_fraction(verdict))

    never_evaluated = bool(cands) and all((c.get("verdict") or {}).get("not_evaluated") for c in cands)
    # a coder that cannot handle the task says nothing about the direction: no transition is recorded
    unsupported = bool(cands) and all((c.get("error") or "").startswith(UNSUPPORTED) for c in cands)
    never_evaluated = never_evaluated or unsupported
    mem = memory_for(ctx)
    if mem is not None and ctx.learn and direction.get("id") and cands and not never_evaluated:
        from htam_agent.memory.schema import Outcome

        speed = verdict.get("speedup_vs_eager") if accepted else None
        outcome = Outcome(accepted=bool(accepted), status=memory_status(verdict),
                          speedup_vs_eager=speed if speed and speed > 0 else None,
                          failed_reason="" if accepted else (verdict.get("reason") or "")[:500])
        known = mem.strategies()
        note = (f"{state.get('task_name')}: direction {direction['id']} with {', '.join(strategy_ids) or 'no strategy'}"
                f" -> {verdict.get('status')}" + (f", {speed:.2f}x over eager" if speed else "")
                + ("" if accepted else f" ({(verdict.get('reason') or '')[:200]})"))
        mem.record(memory_state(state, ctx), direction["id"], [s for s in strategy_ids if s in known], outcome,
                   history=history_steps(state), note=note, task_id=state.get("task_name", ""),
                   run_id=state["run_id"], uid=f"{state['run_id']}:{step}")

    record = StepRecord(step=step, direction=direction.get("id"), direction_reason=direction.get("reason", ""),
                        strategies=strategy_ids, status=verdict.get("status", "none"), accepted=bool(accepted),
                        failed=not accepted, speedup_vs_eager=verdict.get("speedup_vs_eager"),
                        speedup_vs_compile=verdict.get("speedup_vs_compile"), roofline_fraction=roofline_fraction(verdict),
                        repairs=max((c.get("repair", 0) for c in cands), default=0), candidates=len(cands),
                        reason=(verdict.get("reason") or "")[:500], improved=improved)
    update["history"] = [record]
    update["step"] = step + 1
    update["human"] = None

    best = update.get("best") or prev_best
    stop = state.get("stop_reason")
    if not stop and unsupported and not any(c.get("uses_llm") for c in cands):
        stop = "unsupported"  # a deterministic coder will not change its mind at the next step
    if not stop:
        spent = evaluations_used(state)  # this step's verdicts are already in the state
        if step + 1 >= ctx.steps or (ctx.max_evaluations is not None and spent >= ctx.max_evaluations):
            stop = "budget"
        elif best and ctx.target_speedup and (best.get("speedup_vs_eager") or 0) >= ctx.target_speedup:
            stop = "target_speedup"
        elif best and (best.get("roofline_fraction") or 0) >= ctx.roofline_stop:
            stop = "roofline"
    update["stop_reason"] = stop
    get_stream_writer()({"event": "step_done", "step": step, "direction": direction.get("id"),
                         "status": record["status"], "speedup_vs_eager": record["speedup_vs_eager"],
                         "best_speedup": (best or {}).get("speedup_vs_eager"), "improved": improved,
                         "stop": stop})
    return update


def route_after_update(state: AgentState) -> str:
    return "finalize" if state.get("stop_reason") else "analyze"
