"""Select a global direction on the HTG for the current state and the recent history.

The policy is the memory's (priors, state fit, transitions attended over the history, exploration), with the
context's switches: `direction_policy` random or first for baselines, `use_transitions=False` for the
ablation, `memory_mode` flat (no hierarchy: the direction follows the best retrieved strategy) or none.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from htam_agent.context import RunContext
from htam_agent.nodes._memory_state import history_steps, memory_state
from htam_agent.resources import memory_for
from htam_agent.state import AgentState, DirectionChoice


def _ranked(state: AgentState, ctx: RunContext) -> list[Any]:
    from htam_agent.memory.policy import score_directions

    mem = memory_for(ctx)
    assert mem is not None
    policy = mem.policy
    if not ctx.use_transitions:
        policy = replace(policy, w_edge=0.0, w_similar=0.0)
    key = memory_state(state, ctx).key
    return score_directions(mem.catalog.directions, key, history_steps(state), mem.transitions.index(), policy,
                            ctx.seed + state.get("step", 0))


def select_direction(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    step = state.get("step", 0)
    if ctx.memory_mode != "htam":
        # none: no memory at all; flat: the retrieve node picks the direction of the best flat hit
        choice: DirectionChoice = {"id": None, "reason": f"memory mode {ctx.memory_mode}: no direction graph",
                                   "score": None, "alternatives": [], "chosen_by": "none"}
    else:
        ranked = _ranked(state, ctx)
        alts = [{"id": d.id, "score": round(d.score, 4), "reason": d.reason} for d in ranked[:4]]
        if ctx.direction_policy == "random":
            pick = random.Random(f"{ctx.seed}:{state.get('run_id', '')}:{step}").choice(ranked)
            choice = {"id": pick.id, "reason": "random direction (baseline policy)", "score": pick.score,
                      "alternatives": alts, "chosen_by": "random"}
        elif ctx.direction_policy == "first":
            pick = sorted(ranked, key=lambda d: d.id)[step % len(ranked)]
            choice = {"id": pick.id, "reason": "fixed round-robin order (baseline policy)", "score": pick.score,
                      "alternatives": alts, "chosen_by": "first"}
        else:
            top = ranked[0]
            choice = {"id": top.id, "reason": top.reason, "score": round(top.score, 4), "alternatives": alts,
                      "chosen_by": "policy"}
    get_stream_writer()({"event": "direction", "step": step, "direction": choice["id"],
                         "reason": choice["reason"][:300]})
    return {"direction": choice}
