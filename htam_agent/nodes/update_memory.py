"""Close a step: keep the best candidate, record each candidate's transition in the memory, learn a strategy card
from a kernel that beat the best, decide whether to go on.

The memory learns from real verdicts only: a candidate that was never evaluated (replay mode without a stored
verdict) is not recorded as a failure. It learns what was done, not what was asked: each candidate is one event
under the direction and strategies it applied (declared in its reply, else assigned by its portfolio slot).
Recording uses a uid made of the run id, the step and the variant, so a step re-run after a resume does not count
twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from htam_agent.context import RunContext
from htam_agent.evaluation.parent.readout import Readout
from htam_agent.nodes._memory_state import (
    history_steps,
    memory_state,
    state_key_list,
)
from htam_agent.nodes.generate import EXHAUSTED, UNSUPPORTED
from htam_agent.run.resources import memory_for
from htam_agent.state import (
    AgentState,
    Best,
    CandidateRecord,
    StepRecord,
    evaluations_used,
    latest_per_variant,
    step_candidates,
)

if TYPE_CHECKING:  # the memory's modules load with the memory, not with the graph
    from htam_agent.memory.htam import HTAMemory
    from htam_agent.memory.schema import HistoryStep, MemoryState, Strategy


def _speed(c: dict[str, Any]) -> float:
    return Readout(c.get("verdict")).speedup_vs_eager or 0.0


def update_memory(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    step = state["step"]
    cands = step_candidates(state)
    accepted = [c for c in cands if Readout(c.get("verdict")).accepted]
    chosen = max(accepted, key=_speed) if accepted else (max(cands, key=lambda c: (c.get("repair", 0),
                                                                                   -c.get("variant", 0)))
                                                          if cands else None)
    verdict = (chosen or {}).get("verdict") or {}
    read = Readout(verdict)
    direction = state.get("direction") or {}
    strategy_ids = list(dict.fromkeys(s for c in cands for s in c.get("strategy_ids", [])))
    prev_best = state.get("best")
    update: dict[str, Any] = {}

    improved = False
    if accepted and chosen is not None:
        speed = read.speedup_vs_eager
        old = (prev_best or {}).get("speedup_vs_eager")
        if prev_best is None or (speed is not None and (old is None or speed > old)):
            improved = True
            update["best"] = Best(step=step, variant=chosen.get("variant", 0), code=chosen["code"] or "",
                                  code_path=chosen.get("code_path") or "", verdict=verdict,
                                  speedup_vs_eager=speed, speedup_vs_compile=read.speedup_vs_compile,
                                  roofline_fraction=read.roofline_fraction)

    # a coder that cannot handle the task, or has nothing new to write, says nothing about the direction: no
    # transition is recorded
    unsupported = bool(cands) and all((c.get("error") or "").startswith(UNSUPPORTED) for c in cands)
    exhausted = bool(cands) and all((c.get("error") or "").startswith((UNSUPPORTED, EXHAUSTED)) for c in cands)
    finals = [c for _, c in sorted(latest_per_variant(cands).items())]
    mem = memory_for(ctx)
    learned: str | None = None
    if mem is not None and ctx.learn and direction.get("id") and not exhausted:
        mstate = memory_state(state, ctx)
        history = history_steps(state)
        known = mem.strategies()
        for c in finals:
            _record_candidate(mem, state, c, c.get("direction") or direction["id"], mstate, history, known, step)
        if improved and chosen is not None and chosen.get("code"):
            card = mem.learn_card(mstate, chosen.get("direction") or direction["id"], code=chosen["code"] or "",
                                  plan=chosen.get("plan", ""), speedup_after=read.speedup_vs_eager,
                                  built_on=chosen.get("strategy_ids") or [], task_id=state["task_name"],
                                  run_id=state["run_id"], step=step)
            learned = card.id if card is not None else None

    applied = (chosen or {}).get("direction") or direction.get("id")
    record = StepRecord(step=step, direction=applied, direction_reason=direction.get("reason", ""),
                        strategies=list((chosen or {}).get("strategy_ids") or []) if accepted else strategy_ids,
                        status=read.status if read.recorded else "none", accepted=bool(accepted),
                        failed=not accepted, speedup_vs_eager=read.speedup_vs_eager,
                        speedup_vs_compile=read.speedup_vs_compile, roofline_fraction=read.roofline_fraction,
                        repairs=max((c.get("repair", 0) for c in cands), default=0), candidates=len(cands),
                        reason=read.reason[:500], improved=improved,
                        directions=[c.get("direction") or direction.get("id") for c in finals],
                        state_key=state_key_list(state), learned=learned)
    update["history"] = [record]
    update["step"] = step + 1
    update["human"] = None

    best = update.get("best") or prev_best
    stop = state.get("stop_reason")
    if not stop and exhausted and not any(c.get("uses_llm") for c in cands):
        # a deterministic coder will not change its mind at the next step
        stop = "unsupported" if unsupported else "space_exhausted"
    if not stop:
        spent = evaluations_used(state)  # this step's verdicts are already in the state
        if step + 1 >= ctx.steps or (ctx.max_evaluations is not None and spent >= ctx.max_evaluations):
            stop = "budget"
        elif best and ctx.target_speedup and (best.get("speedup_vs_eager") or 0) >= ctx.target_speedup:
            stop = "target_speedup"
        elif best and (best.get("roofline_fraction") or 0) >= ctx.roofline_stop:
            stop = "roofline"
    update["stop_reason"] = stop
    if learned:
        get_stream_writer()({"event": "learned", "step": step, "strategy": learned})
    get_stream_writer()({"event": "step_done", "step": step, "direction": applied,
                         "status": record["status"], "speedup_vs_eager": record["speedup_vs_eager"],
                         "best_speedup": (best or {}).get("speedup_vs_eager"), "improved": improved,
                         "stop": stop})
    return update


def _record_candidate(mem: HTAMemory, state: AgentState, c: CandidateRecord, direction: str, mstate: MemoryState,
                      history: list[HistoryStep], known: dict[str, Strategy], step: int) -> None:
    """One event per candidate (its last repair) with a real verdict, under what it applied."""
    from htam_agent.memory.schema import Outcome

    read = Readout(c.get("verdict"))
    if not read.recorded or read.not_evaluated or (c.get("error") or "").startswith((UNSUPPORTED, EXHAUSTED)):
        return
    if direction not in mem.directions:
        return  # a declared direction the memory does not know (the coder's parser only passes known ones)
    accepted = read.accepted
    speed = read.speedup_vs_eager if accepted else None
    outcome = Outcome(accepted=accepted, status=read.memory_status,
                      speedup_vs_eager=speed if speed and speed > 0 else None,
                      failed_reason="" if accepted else read.reason[:500])
    strategies = [s for s in c.get("strategy_ids") or [] if s in known]
    how = "declared" if c.get("declared") else "assigned"
    note = (f"{state['task_name']}: direction {direction} ({how}) with {', '.join(strategies) or 'no strategy'}"
            f" -> {read.status}" + (f", {speed:.2f}x over eager" if speed else "")
            + ("" if accepted else f" ({read.reason[:200]})"))
    variant = c.get("variant", 0)
    uid = f"{state['run_id']}:{step}" + (f":v{variant}" if variant else "")
    mem.record(mstate, direction, strategies, outcome, history=history, note=note,
               task_id=state["task_name"], run_id=state["run_id"], uid=uid)


def route_after_update(state: AgentState) -> str:
    return "finalize" if state.get("stop_reason") else "analyze"
