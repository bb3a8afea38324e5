"""Select the step's directions on the HTG: a portfolio, one direction per candidate, for the state and history.

The policy is the memory's (priors, state fit, transitions attended over the history, exploration, and the task's
no-repeat rules), with the context's switches: `direction_policy` random or first for baselines,
`use_transitions=False` for the ablation, `memory_mode` flat (no hierarchy: the direction follows the best
retrieved strategy) or none. With K candidates per step the K candidates take K distinct directions, so a step
explores K hypotheses instead of K variations of one, split by `memory.policy.split_portfolio`: ceil(K/2) slots
exploit directions whose latest attempt in this task improved the previous best, the rest explore directions
the task has not measured that fit the state (all K by rank at step 0; the split is in the step's reason). The
ranked directions and their evidence go to the coder as advice (`advice`), the direction of the first slot is
the step's headline `id`.
"""

from __future__ import annotations

import random
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from htam_agent.context import RunContext
from htam_agent.nodes._memory_state import history_steps, memory_state, task_memory
from htam_agent.run.resources import memory_for
from htam_agent.state import AgentState, DirectionChoice

#: directions shown to the coder as ranked advice (at least the portfolio's size)
ADVICE_SIZE = 4


def _ranked(state: AgentState, ctx: RunContext) -> list[Any]:
    mem = memory_for(ctx)
    assert mem is not None
    return mem.select_directions(memory_state(state, ctx), history_steps(state), seed=ctx.seed + state["step"],
                                 task=task_memory(state, ctx), use_transitions=ctx.use_transitions)


def portfolio(ids: list[str], k: int) -> list[str]:
    """k slots from a ranked list of distinct ids: the top k, cycling when there are fewer than k."""
    if not ids or k <= 0:
        return []
    return [ids[i % len(ids)] for i in range(k)]


def select_direction(state: AgentState, runtime: Runtime[RunContext]) -> dict[str, Any]:
    ctx = runtime.context
    step = state["step"]
    k = max(1, ctx.candidates)
    if ctx.memory_mode != "htam":
        # none: no memory at all; flat: the retrieve node picks the direction of the best flat hit
        choice: DirectionChoice = {"id": None, "reason": f"memory mode {ctx.memory_mode}: no direction graph",
                                   "score": None, "alternatives": [], "chosen_by": "none"}
    else:
        ranked = _ranked(state, ctx)
        alts = [{"id": d.id, "score": round(d.score, 4), "reason": d.reason} for d in ranked[:4]]
        advice = [{"id": d.id, "name": d.name, "evidence": d.summary, "score": round(d.score, 3)}
                  for d in ranked[:max(ADVICE_SIZE, k)]]
        ids = [d.id for d in ranked]
        by_id = {d.id: d for d in ranked}
        if ctx.direction_policy == "random":
            # seeded by what the bench varies (seed, task, step), not the run id (new every run): the baseline
            # draws the same directions when the same bench is run again
            rng = random.Random(f"{ctx.seed}:{state['task_name']}:{step}")
            slots = portfolio(rng.sample(ids, len(ids)), k)
            reason, chosen_by = "random direction (baseline policy)", "random"
            advice = []  # the baseline gives no ranking to follow
        elif ctx.direction_policy == "first":
            order = sorted(ids)
            slots = [order[(step * k + i) % len(order)] for i in range(k)]
            reason, chosen_by = "fixed round-robin order (baseline policy)", "first"
            advice = []
        else:
            from htam_agent.memory.policy import split_portfolio

            slots, split = split_portfolio(ranked, k)
            reason, chosen_by = f"portfolio of {k}: {split}. {by_id[slots[0]].reason}", "policy"
        top = by_id[slots[0]]
        choice = {"id": top.id, "reason": reason, "score": round(top.score, 4), "alternatives": alts,
                  "chosen_by": chosen_by, "portfolio": [{"id": d, "strategies": []} for d in slots],
                  "advice": advice}
    get_stream_writer()({"event": "direction", "step": step, "direction": choice["id"],
                         "portfolio": [p["id"] for p in choice.get("portfolio", [])],
                         "reason": choice["reason"][:300]})
    return {"direction": choice}
