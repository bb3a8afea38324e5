"""The graph's state: what a run knows between nodes, checkpointed after every super-step.

Only JSON-friendly values live here (the SQLite checkpointer serializes them; a resumed run rebuilds
everything else from the context). History is append-only; candidates are merged by (step, variant, repair),
so the parallel generation branches of a step (LangGraph `Send`) each add their own candidate without
overwriting the others, and the evaluate node's verdict replaces its pending record in place.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Required, TypedDict


class Analysis(TypedDict, total=False):
    op_class: str          # memory.schema.OP_CLASSES
    bottleneck: str        # memory, compute, latency, occupancy, unknown
    status: str            # none, compile_error, incorrect, correct_slow, near_roofline
    description: str       # one paragraph for prompts and embeddings
    ops: list[str]         # the reference's operators, from its FX graph
    features: list[str]    # the operator classes the reference contains (strategy applicability)
    shapes: dict[str, int]  # the task's shape facts (memory.schema.SHAPE_FACTS: row, reduce, channels, ...)


class DirectionChoice(TypedDict, total=False):
    id: str | None
    reason: str
    score: float | None
    alternatives: list[dict[str, Any]]   # the next best directions with their scores (for people and reports)
    chosen_by: str                       # policy | random | first | person | none
    portfolio: list[dict[str, Any]]      # per candidate of the step: {"id", "strategies": [StrategyBrief fields]}
    advice: list[dict[str, Any]]         # the ranked directions shown to the coder: {"id", "name", "evidence", "score"}


class CandidateRecord(TypedDict, total=False):
    step: int
    variant: int
    repair: int
    code: str | None
    code_path: str | None
    coder: str
    uses_llm: bool
    strategy_ids: list[str]
    error: str             # why there is no code (generation failed)
    llm_calls: int
    input_tokens: int
    output_tokens: int
    compile: dict[str, Any] | None        # compile-only verdict (parallel branches)
    verdict: dict[str, Any] | None        # the full verdict (sequential timing)
    edited_by_person: bool
    direction: str | None                 # the direction the code applies (declared by the coder, else assigned)
    assigned_direction: str | None        # the direction this candidate was asked to follow (its portfolio slot)
    declared: bool                        # the reply declared what it applied
    plan: str                             # the reply's plan paragraph (a learned card's description)


class Best(TypedDict, total=False):
    step: int
    variant: int
    code: str
    code_path: str
    verdict: dict[str, Any]
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    roofline_fraction: float | None


class StepRecord(TypedDict, total=False):
    """One finished step, as the memory node writes it: the graph's history and the run result's `steps` hold
    the same record (no copy into another shape)."""

    step: int
    direction: str | None
    direction_reason: str
    strategies: list[str]
    status: str
    accepted: bool
    failed: bool
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    roofline_fraction: float | None
    repairs: int
    candidates: int
    reason: str
    improved: bool
    directions: list[str | None]          # what each candidate of the step applied (by variant)
    state_key: list[str]                  # memory state key the step started from: op_class, bottleneck, status
    learned: str | None                   # id of the strategy card learned from this step's kernel, if any


def merge_candidates(left: list[CandidateRecord] | None, right: list[CandidateRecord] | None
                     ) -> list[CandidateRecord]:
    """Reducer: add new attempts, replace an attempt already there (same step, variant and repair)."""
    merged: dict[tuple[int, int, int], CandidateRecord] = {}
    for c in [*(left or []), *(right or [])]:
        merged[(c.get("step", 0), c.get("variant", 0), c.get("repair", 0))] = c
    return list(merged.values())


class AgentState(TypedDict, total=False):
    """Required: what `prepare`, the graph's first node, writes from the run's input (only `task_path` must be
    given; `task_source`, `run_id` and `task_name` are derived when absent), so every later node reads them
    with `state[...]`. The others start as STATE_DEFAULTS, which `prepare` writes too."""

    # --- input, completed by prepare ------------------------------------------------------------------
    task_path: Required[str]
    task_source: Required[str]
    run_id: Required[str]
    task_name: Required[str]                    # the task file's stem unless the input names it
    # --- per step (overwritten) -----------------------------------------------------------------------
    step: Required[int]                         # the step being worked on (0-based)
    analysis: Analysis
    direction: DirectionChoice
    strategies: list[dict[str, Any]]            # StrategyBrief fields
    notes: list[str]
    human: dict[str, Any] | None                # the person's answer at the last interrupt
    # --- accumulated ----------------------------------------------------------------------------------
    candidates: Annotated[list[CandidateRecord], merge_candidates]
    history: Annotated[list[StepRecord], operator.add]
    best: Best | None
    stop_reason: str | None


#: The one default of each field that is not required: what `prepare` starts a run with.
STATE_DEFAULTS: dict[str, Any] = {"analysis": {}, "direction": {}, "strategies": [], "notes": [], "human": None,
                                  "candidates": [], "history": [], "best": None, "stop_reason": None}


def step_candidates(state: AgentState, step: int | None = None) -> list[CandidateRecord]:
    s = state["step"] if step is None else step
    return [c for c in state.get("candidates", []) if c.get("step") == s]


def latest_per_variant(cands: list[CandidateRecord]) -> dict[int, CandidateRecord]:
    """Each variant's most recent attempt (its last repair)."""
    out: dict[int, CandidateRecord] = {}
    for c in cands:
        v = c.get("variant", 0)
        if v not in out or c.get("repair", 0) >= out[v].get("repair", 0):
            out[v] = c
    return out


def measured_by_step(state: AgentState) -> dict[int, list[CandidateRecord]]:
    """What the task measured so far: each finished step's candidates (each variant's last repair) with a real
    verdict (not one the gateway could not evaluate), steps and variants in order."""
    finished = sorted(s for s in {h.get("step") for h in state.get("history", [])} if s is not None)
    out: dict[int, list[CandidateRecord]] = {}
    for step in finished:
        last = [c for _, c in sorted(latest_per_variant(step_candidates(state, step)).items())
                if c.get("verdict") and not c["verdict"].get("not_evaluated")]
        if last:
            out[step] = last
    return out


def evaluations_used(state: AgentState) -> int:
    """Candidates that reached the evaluator (or were found without code) in this run, repairs included."""
    return sum(1 for c in state.get("candidates", []) if c.get("verdict") is not None)


def evaluations_left(state: AgentState, cap: int | None) -> int | None:
    return None if cap is None else max(0, cap - evaluations_used(state))
