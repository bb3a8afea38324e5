"""Issue 23: the cross-task scenario as a test. A memory built on several norm tasks gives a new norm task a better
first step than a fresh memory does, and a pooling task's experience does not steer a GEMM chain. Scripted
outcomes (a fixed table of what each direction's first kernel gives), real SQLite, real embedded Chroma, the
shipped embedding model; every choice is the memory's own (`select_directions`, `split_portfolio`,
`retrieve_strategies`)."""

from __future__ import annotations

from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.htam import HTAMemory
from htam_agent.memory.policy import split_portfolio
from htam_agent.memory.schema import Attempt, MemoryState, Outcome, StateKey, TaskMemory

#: what a direction's kernel gives over eager at a norm task's first step (unlisted: x1.0): on the H200 the seed's
#: favourite, parallel mapping, loses here, and memory access wins (the issue 17 bench saw the same shape)
NORM_FIRST = {"memory_access": 1.6, "parallel_mapping": 0.6, "fusion_restructuring": 1.1}
KERNEL = "__global__ void k(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x]; }"


def _norm(i: int, status: str = "none", speedup: float | None = None) -> MemoryState:
    return MemoryState(StateKey("normalization", "memory", status, "cuda"), f"norm task {i}: Reference ops: "
                       "layer_norm", speedup, frozenset({"normalization"}),
                       MemoryState.facts_of({"row": 4096, "reduce": 4096, "elements": 1 << 26}))


def _first_step(mem: HTAMemory, i: int, k: int = 2) -> tuple[str, float]:
    """Step 0 of a norm task with K candidates: the memory's portfolio, each slot's scripted outcome recorded
    (the step's best is the task's first kernel); returns the best slot and its speedup over eager."""
    s = _norm(i)
    slots, _ = split_portfolio(mem.select_directions(s, task=TaskMemory(), seed=i), k)
    results = {d: NORM_FIRST.get(d, 1.0) for d in slots}
    for v, d in enumerate(slots):
        mem.record(s, d, [], Outcome(True, "correct_slow", results[d]), task_id=f"norm{i}", uid=f"norm{i}:0:{v}")
    best = max(results, key=results.get)
    return best, results[best]


def test_a_memory_of_norm_tasks_gives_a_new_norm_task_a_better_first_step(tmp_path):
    fresh = HTAMemory(MemoryConfig(tmp_path / "fresh"))
    trained = HTAMemory(MemoryConfig(tmp_path / "trained"))
    for i in range(4):  # four norm tasks: step 0, then a step 1 that explores what step 0 did not try
        best, speed = _first_step(trained, i)
        s1 = _norm(i, "correct_slow", speed)
        task = TaskMemory((Attempt(best, (), False, True, s1.key, 0, True, baseline=True, speedup=speed),))
        (d1,), _ = split_portfolio(trained.select_directions(s1, [best], task=task), 1)
        assert d1 != best  # step 1 explores
        trained.record(s1, d1, [], Outcome(True, "correct_slow", speed), history=[best], task_id=f"norm{i}")
        if best == "memory_access":
            trained.learn_card(_norm(i), best, code=KERNEL, plan="one pass, float4 loads", speedup_after=speed,
                               task_id=f"norm{i}")
    new = _norm(99)
    got_fresh = fresh.select_directions(new, task=TaskMemory())[0].id
    got_trained = trained.select_directions(new, task=TaskMemory())[0].id
    assert NORM_FIRST.get(got_trained, 1.0) > NORM_FIRST.get(got_fresh, 1.0), (got_fresh, got_trained)
    assert got_trained == "memory_access"
    # the evidence the new task's prompt would carry says what it is: first kernels over eager
    top = trained.select_directions(new, task=TaskMemory())[0]
    assert "gave a task's first kernel (typical x1.60 over eager)" in top.summary
    # the card learned on a norm task of the same shapes is offered to it (real Chroma)
    hits = trained.retrieve_strategies("memory_access", new, k=3)
    assert any(h.strategy.source == "learned" for h in hits)
    fresh.close()
    trained.close()


def test_a_pooling_tasks_experience_does_not_steer_a_gemm_chain(tmp_path):
    gemm = MemoryState(StateKey("fused", "compute", "none", "cuda"), "Reference ops: linear, gelu", None,
                       frozenset({"matmul", "elementwise"}),
                       MemoryState.facts_of({"row": 4096, "elements": 1 << 22}))
    fresh = HTAMemory(MemoryConfig(tmp_path / "fresh"))
    before = [d.id for d in fresh.select_directions(gemm, task=TaskMemory())]
    before_hits = [h.strategy.id for h in fresh.retrieve_strategies(before[0], gemm, k=4)]
    mem = HTAMemory(MemoryConfig(tmp_path / "pool"))
    pool = MemoryState(StateKey("pooling", "memory", "none", "cuda"), "Reference ops: max_pool2d", None,
                       frozenset({"pooling"}), MemoryState.facts_of({"row": 512, "channels": 64, "spatial": 1 << 18}))
    for i in range(6):  # a pooling task that gains a lot under the direction the GEMM chain ranks last
        d = before[-1]
        mem.record(pool, d, [], Outcome(True, "correct_slow", 8.0), task_id=f"pool{i}", uid=f"p{i}")
        later = MemoryState(pool.key.__class__("pooling", "memory", "correct_slow", "cuda"), pool.description, 8.0,
                            pool.features, pool.shape_facts)
        mem.record(later, d, [], Outcome(True, "correct_slow", 32.0), history=[d], task_id=f"pool{i}", uid=f"q{i}")
        mem.learn_card(pool, d, code=KERNEL + f"// {i}", plan="halo tiles in shared memory", speedup_after=8.0,
                       task_id=f"pool{i}")
    after = mem.select_directions(gemm, task=TaskMemory())
    assert [d.id for d in after] == before  # the same ranking as a fresh memory
    assert all("no record yet in fused tasks" in d.summary for d in after)
    hits = [h.strategy.id for h in mem.retrieve_strategies(before[0], gemm, k=4)]
    assert hits == before_hits and not any(h.startswith("learned-pooling") for h in hits)
    fresh.close()
    mem.close()
