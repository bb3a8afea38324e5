"""Issue 23: a step's portfolio explores what the task has not tried. Step 1 never re-offers only directions step 0
already measured while an untried direction fits the state, however good their record in other tasks; the split
between exploiting and exploring is the documented one. Real SQLite (the memory's transition log)."""

from __future__ import annotations

import itertools

import pytest

from htam_agent.memory.policy import MIN_STATUS_AFFINITY, bottleneck_fit, split_portfolio
from htam_agent.memory.schema import Attempt, MemoryState, Outcome, StateKey, TaskMemory

CLASSES = ("normalization", "elementwise", "reduction", "pooling", "matmul", "fused")


def _state(op: str, status: str, speedup: float | None) -> MemoryState:
    feats = {"fused": ("matmul", "elementwise")}.get(op, (op,))
    bn = "compute" if op == "matmul" else "memory"
    return MemoryState(StateKey(op, bn, status, "cuda"), f"{op} task", speedup, frozenset(feats))


def _fits(mem, d_id: str, s: MemoryState, task: TaskMemory) -> bool:
    """The policy's definition of an untried direction that fits the state, recomputed from the seed."""
    from htam_agent.memory.retrieval import count_fitting

    d = mem.catalog.direction(d_id)
    counts = count_fitting(mem.strategies(), s, "cuda", task.excluded_strategies(s.key)).get(d_id)
    return (bottleneck_fit(d, s.key.bottleneck) > 0 and d.affinity(s.key.status) >= MIN_STATUS_AFFINITY
            and counts is not None and counts[1] > 0)


def _step0_attempts(slots: list[str], key: StateKey, outcome: str) -> TaskMemory:
    if outcome == "rejected":
        return TaskMemory(tuple(Attempt(d, (), False, False, key, 0, asked=d) for d in slots))
    # accepted: the first slot's kernel is the task's first (a baseline), the others slower than it
    return TaskMemory(tuple(Attempt(d, (), False, True, key, 0, i == 0, asked=d, baseline=True, speedup=1.5 - 0.1 * i)
                            for i, d in enumerate(slots)))


@pytest.mark.parametrize("trained", [False, True])
def test_step_1_never_offers_only_what_step_0_measured(mem, trained):
    if trained:  # other tasks say the step-0 favourites pay a lot: the untried still come first at step 1
        for op, i in itertools.product(CLASSES, range(3)):
            s0 = _state(op, "none", None)
            for d in [r.id for r in mem.select_directions(s0)][:3]:
                mem.record(s0, d, [], Outcome(True, "correct_slow", 3.0), task_id=f"{op}{i}", uid=f"{op}{i}{d}")
                s1 = _state(op, "correct_slow", 3.0)
                mem.record(s1, d, [], Outcome(True, "correct_slow", 9.0), history=[d], task_id=f"{op}{i}",
                           uid=f"{op}{i}{d}:1")
    checked = 0
    for op, k, outcome in itertools.product(CLASSES, (1, 2, 3), ("accepted", "rejected")):
        s0 = _state(op, "none", None)
        slots0, split0 = split_portfolio(mem.select_directions(s0, task=TaskMemory()), k)
        assert split0 == f"{k} by rank (nothing measured in this task yet)"
        task = _step0_attempts(slots0, s0.key, outcome)
        s1 = _state(op, "correct_slow" if outcome == "accepted" else "incorrect",
                    1.5 if outcome == "accepted" else None)
        ranked = mem.select_directions(s1, [slots0[0]], task=task)
        slots1, split1 = split_portfolio(ranked, k)
        untried = [d.id for d in ranked if d.id not in slots0 and _fits(mem, d.id, s1, task)]
        if not untried:
            continue
        checked += 1
        assert not set(slots1) <= set(slots0), (op, k, outcome, slots0, slots1)
        # nothing improved the previous best at step 0 (a first kernel is a baseline): every slot explores
        assert set(slots1) <= set(untried) or len(untried) < k, (op, k, slots1, untried)
        assert split1.startswith(f"0 exploit (last attempt here improved the previous best), {min(k, len(untried))} "
                                 "explore")
        # the bonus outweighs every direction measured here without a gain over the previous best
        measured = [d.score for d in ranked if d.role == "measured"]
        assert all(d.score > max(measured) for d in ranked if d.role == "explore"), ranked
    assert checked >= 24


def test_a_direction_that_just_improved_is_exploited_alongside_exploration(mem):
    s = _state("normalization", "correct_slow", 2.0)
    task = TaskMemory((Attempt("parallel_mapping", (), False, True, s.key, 0, True, baseline=True, speedup=1.2),
                       Attempt("memory_access", (), True, True, s.key, 1, True, speedup=2.0, vs_best=1.67)))
    ranked = mem.select_directions(s, ["parallel_mapping", "memory_access"], task=task)
    roles = {d.id: d.role for d in ranked}
    assert roles["memory_access"] == "exploit" and roles["parallel_mapping"] == "measured"
    for k, n_exploit in ((1, 1), (2, 1), (3, 1)):  # ceil(K/2), at most the one direction that gained
        slots, split = split_portfolio(ranked, k)
        assert slots[0] == "memory_access" and len(slots) == len(set(slots)) == k
        assert "parallel_mapping" not in slots
        assert split.startswith(f"{n_exploit} exploit") and f"{k - n_exploit} explore" in split
    assert "not tried in this task yet" in next(d for d in ranked if d.role == "explore").summary
