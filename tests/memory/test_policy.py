"""Direction selection learns from recorded outcomes (not only stores them); falls back to priors when empty."""

from __future__ import annotations

from memory_helpers import fail, gain, state

from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.htam import HTAMemory
from htam_agent.memory.policy import PolicyConfig, bottleneck_fit
from htam_agent.memory.schema import HistoryStep
from htam_agent.memory.stats import KEYS, similarity_vector, state_similarity

A, B, C, D = "memory_access", "instruction_throughput", "data_reuse", "launch_overhead"
# For a compute-bound matmul the seed prefers C (data_reuse, prior 0.95) over B (instruction_throughput, 0.90):
# the tests make experience contradict the priors.


def _rank(mem: HTAMemory, st, history=(), seed=0) -> list[str]:
    return [s.id for s in mem.select_directions(st, history, seed=seed)]


def _teach(mem: HTAMemory, prev: str, good: str, bad: str, n: int = 8, task: str = "t1", **state_kw) -> None:
    """After `prev`, `good` gains x1.4 and `bad` is rejected, n times each, in similar states."""
    texts = ["fp32 GEMM 4096x4096", "fp32 GEMM 2048x8192", "batched GEMM 64x512x512"]
    for i in range(n):
        st = state(text=texts[i % 3], **state_kw)
        mem.record(st, good, ["it_tensor_core_mma"] if good == B else [], gain(1.4), history=[prev], task_id=task)
        mem.record(st, bad, [], fail("tolerance exceeded: max abs err 3e-3"), history=[prev], task_id=task)


def test_empty_memory_ranks_by_priors_and_state_fit(mem):
    st = state("elementwise", "memory", "correct_slow")
    ranked = mem.select_directions(st)
    cat = {d.id: d for d in mem.catalog.directions}
    expect = sorted(cat, key=lambda d: -(cat[d].prior("elementwise") + 0.5 * cat[d].affinity("correct_slow")
                                         + 0.5 * bottleneck_fit(cat[d], "memory")))
    assert [s.id for s in ranked][:3] == expect[:3]
    assert ranked[0].id == "memory_access"
    for s in ranked:  # nothing learned, nothing to explore yet
        assert s.components["transition"] == s.components["similar"] == s.components["explore"] == 0.0
        assert s.reason.startswith("prior ")


def test_failing_status_puts_correctness_first_on_empty_memory(mem):
    assert _rank(mem, state("matmul", "unknown", "compile_error"))[0] == "boundary_correctness"
    assert _rank(mem, state("reduction", "unknown", "incorrect"))[0] == "boundary_correctness"


def test_priors_follow_operator_class(mem):
    assert _rank(mem, state("matmul", "compute"))[:2] == ["data_reuse", "instruction_throughput"]
    top3 = _rank(mem, state("normalization", "memory"))[:3]
    assert {"parallel_mapping", "memory_access"} <= set(top3)


def test_b_after_a_gains_c_after_a_fails_then_b_ranks_over_c(mem):
    st = state(text="fp32 GEMM 3072x3072")
    before = _rank(mem, st, [A])
    assert before.index(C) < before.index(B)  # priors prefer C
    _teach(mem, prev=A, good=B, bad=C)
    after = mem.select_directions(st, [A])
    ids = [s.id for s in after]
    assert ids.index(B) < ids.index(C)
    assert ids[0] == B
    by_id = {s.id: s for s in after}
    assert by_id[B].components["transition"] > 0 > by_id[C].components["transition"]
    assert f"after {A} (latest)" in by_id[B].reason and "improved" in by_id[B].reason


def test_preference_is_specific_to_the_previous_direction(mem):
    _teach(mem, prev=A, good=B, bad=C)
    _teach(mem, prev=D, good=C, bad=B)  # the marginal statistics of B and C now cancel out
    st = state()
    after_a, after_d = _rank(mem, st, [A]), _rank(mem, st, [D])
    assert after_a.index(B) < after_a.index(C)
    assert after_d.index(C) < after_d.index(B)


def test_latest_history_step_weighs_most(mem):
    _teach(mem, prev=A, good=B, bad=C)
    _teach(mem, prev=D, good=C, bad=B)
    st = state()
    latest_a = _rank(mem, st, [D, A])  # oldest first: A is the latest step
    latest_d = _rank(mem, st, [A, D])
    assert latest_a.index(B) < latest_a.index(C)
    assert latest_d.index(C) < latest_d.index(B)


def test_learning_carries_over_to_a_new_task_of_the_same_operator_class(mem):
    _teach(mem, prev=A, good=B, bad=C, task="gemm_4096")
    new_task = state(text="fp32 linear layer 1024x4096 (a new task)", speedup=1.1)
    assert _rank(mem, new_task, [A]).index(B) < _rank(mem, new_task, [A]).index(C)
    # a similar but not identical state (another bottleneck) still benefits, more weakly
    other_bn = mem.select_directions(state(bn="memory"), [A])
    ids = [s.id for s in other_bn]
    assert ids.index(B) < ids.index(C)
    # an unrelated operator class is not affected: it still ranks by its priors
    unrelated = state("elementwise", "memory")
    fresh = HTAMemory(MemoryConfig(mem.config.data_dir.parent / "fresh"))
    assert _rank(mem, unrelated, [A]) == _rank(fresh, unrelated, [A])
    fresh.close()


def test_use_transitions_false_ranks_without_the_learned_terms(mem):
    st = state(text="fp32 GEMM 3072x3072")
    _teach(mem, prev=A, good=B, bad=C)
    learned = {s.id: s for s in mem.select_directions(st, [A])}
    assert learned[B].components["transition"] > 0
    ablated = mem.select_directions(st, [A], use_transitions=False)
    assert all(s.components["transition"] == s.components["similar"] == 0.0 for s in ablated)
    same = mem.select_directions(st, [A], policy=PolicyConfig(w_edge=0.0, w_similar=0.0))
    assert [(s.id, s.score) for s in ablated] == [(s.id, s.score) for s in same]
    assert [s.id for s in ablated].index(C) < [s.id for s in ablated].index(B)  # back to the priors' order


def test_a_direction_that_just_failed_is_penalized(mem):
    st = state()
    plain = {s.id: s.score for s in mem.select_directions(st, [A])}
    hist = [HistoryStep(A), HistoryStep(C, failed=True)]
    scored = {s.id: s for s in mem.select_directions(st, hist)}
    assert scored[C].components["fail_penalty"] == -PolicyConfig().w_fail
    assert scored[C].score < plain[C]
    assert "just failed" in scored[C].reason
    two_back = {s.id: s for s in mem.select_directions(st, [HistoryStep(C, failed=True), HistoryStep(A)])}
    assert scored[C].components["fail_penalty"] < two_back[C].components["fail_penalty"] < 0


def test_rarely_tried_directions_get_an_exploration_bonus(mem):
    for _ in range(6):
        mem.record(state(), C, [], gain(1.0), history=[A])  # C tried often, no gain
    scored = {s.id: s for s in mem.select_directions(state(), [A])}
    assert scored[B].components["explore"] > scored[C].components["explore"] > 0


def test_selection_is_deterministic_for_a_seed(mem):
    _teach(mem, prev=A, good=B, bad=C, n=3)
    st = state("reduction", "memory", "correct_slow", text="row sum of a 4096x4096 matrix")
    runs = [[(s.id, s.score) for s in mem.select_directions(st, [A, B], seed=7)] for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    reopened = HTAMemory(mem.config)
    assert [(s.id, s.score) for s in reopened.select_directions(st, [A, B], seed=7)] == runs[0]
    reopened.close()


def test_state_similarity_kernel():
    k = ("matmul", "compute", "correct_slow", "cuda")
    assert state_similarity(k, k) == 1.0
    assert state_similarity(k, ("elementwise", "compute", "correct_slow", "cuda")) == 0.0
    assert 0 < state_similarity(k, ("convolution", "compute", "correct_slow", "cuda")) < 1
    assert state_similarity(k, ("matmul", "memory", "correct_slow", "cuda")) > state_similarity(
        k, ("matmul", "memory", "incorrect", "cuda"))
    vec = similarity_vector(k)  # the dense form used for pooling agrees with the pairwise kernel
    assert all(abs(vec[i] - state_similarity(k, other)) < 1e-12 for i, other in enumerate(KEYS))


def test_unknown_direction_is_rejected(mem):
    import pytest

    with pytest.raises(ValueError, match="unknown direction"):
        mem.select_directions(state(), ["warp_magic"])
    with pytest.raises(ValueError, match="unknown direction"):
        mem.record(state(), "warp_magic", [], gain(1.1))
    with pytest.raises(ValueError, match="unknown strategy"):
        mem.record(state(), A, ["no_such_strategy"], gain(1.1))
