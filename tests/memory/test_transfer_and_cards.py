"""Issue 17: choices that fit the task. Class-first transfer with saturated gains (the outlier scenario, interleaved
classes, concurrent writers), strict strategy applicability, the no-repeat rules, and strategy cards learned from
accepted kernels (retrieved for the same class and backend only, listed by `htam memory show`, carried by
export/import). Real SQLite, real embedded Chroma, the shipped embedding model."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import subprocess_env
from memory_helpers import fail, gain
from typer.testing import CliRunner

from htam_agent.cli.memory import app
from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.htam import HTAMemory
from htam_agent.memory.schema import Attempt, MemoryState, Outcome, StateKey, TaskMemory

PM, MA, FR = "parallel_mapping", "memory_access", "fusion_restructuring"
#: written for row reductions and norms only (the seed lists pooling for pm_block_reduce_shuffle and
#: pm_multi_row_per_block: global and short-window pooling reduce rows too)
REDUCTION_ONLY = {"pm_two_pass_reduction", "pm_warp_per_row", "fr_welford_norm", "fr_online_softmax"}


def st(op: str, status: str = "none", bn: str = "memory", backend: str = "cuda", speedup: float | None = None,
       features: tuple[str, ...] = (), text: str = "") -> MemoryState:
    return MemoryState(StateKey(op, bn, status, backend), text, speedup, frozenset(features or (op,)))


def _top(mem: HTAMemory, s: MemoryState, **kw) -> str:
    return mem.select_directions(s, **kw)[0].id


def _fresh(tmp_path: Path, name: str) -> HTAMemory:
    return HTAMemory(MemoryConfig(tmp_path / name))


# ---------------------------------------------------------------------------------------------- transfer


def test_one_32x_layernorm_outlier_does_not_decide_other_classes(mem, tmp_path):
    """The issue's outlier: LayerNorm gained 32x under parallel_mapping at step 0; GELU (elementwise), a max-pool,
    conv+ReLU+HardSwish (fused) and conv+GroupNorm (fused) still start from what fits them."""
    others = {"elementwise": st("elementwise"), "pooling": st("pooling"),
              "conv_relu_hardswish": st("fused", features=("convolution", "elementwise")),
              "conv_groupnorm": st("fused", features=("convolution", "normalization"))}
    fresh = _fresh(tmp_path, "fresh")
    before = {k: _top(fresh, s) for k, s in others.items()}
    assert before["elementwise"] == MA and before["pooling"] == MA and PM not in before.values()
    mem.record(st("normalization", text="LayerNorm over 4096"), PM, ["pm_warp_per_row"],
               Outcome(True, "correct_slow", 32.0), task_id="layernorm")
    for name, s in others.items():
        ranked = mem.select_directions(s)
        assert ranked[0].id == before[name] != PM, name
        pm = next(r for r in ranked if r.id == PM)
        added = pm.components["transition"] + pm.components["similar"]
        if "normalization" in s.features:  # conv + GroupNorm holds a norm: the outlier counts a little
            fresh_scores = {r.id: r.score for r in fresh.select_directions(s)}
            assert 0 < added < 0.75 * (fresh_scores[before[name]] - fresh_scores[PM]), (name, pm.components)
        else:  # what the outlier adds to an unrelated class is bounded far below the gap between seed priors
            assert added < 0.02, (name, pm.components)
    # within its own class the outlier counts, but as a saturated log gain shrunk toward the prior
    norm = {r.id: r for r in mem.select_directions(st("normalization", features=("normalization",)))}
    learned = norm[PM].components["transition"] + norm[PM].components["similar"]
    assert 0 < learned < 3 * math.log(2) / (1 + mem.policy.shrinkage) + 1e-9
    # and a single x32 weighs barely more than a single x2
    other = _fresh(tmp_path, "x2")
    other.record(st("normalization"), PM, [], Outcome(True, "correct_slow", 2.0))
    x2 = next(r for r in other.select_directions(st("normalization")) if r.id == PM)
    assert learned < 1.35 * (x2.components["transition"] + x2.components["similar"])
    fresh.close()
    other.close()


def test_a_burst_of_norm_outliers_still_leaves_elementwise_and_pooling_alone(mem, tmp_path):
    for i in range(12):
        mem.record(st("normalization", text=f"norm task {i}"), PM, ["pm_warp_per_row"],
                   Outcome(True, "correct_slow", 4.0 + 3 * i), task_id=f"norm{i}")
    fresh = _fresh(tmp_path, "fresh")
    for s in (st("elementwise"), st("pooling"), st("elementwise", "correct_slow", speedup=1.2)):
        assert [(r.id, round(r.score, 9)) for r in mem.select_directions(s)][:3] == \
               [(r.id, round(r.score, 9)) for r in fresh.select_directions(s)][:3]
    # one related-class outlier (reduction -> pooling, affinity 0.4) does not flip the pooling choice either
    mem.record(st("reduction"), PM, [], Outcome(True, "correct_slow", 32.0), task_id="sum")
    assert _top(mem, st("pooling")) == MA
    fresh.close()


def test_interleaved_classes_learn_their_own_lessons(mem, tmp_path):
    """Elementwise and normalization tasks alternate on one memory with opposite lessons; each class ranks as if
    the other had never been recorded (the two classes share no structure, so no experience crosses)."""
    only_ew = _fresh(tmp_path, "ew")
    for i in range(10):
        for m in (mem, only_ew):
            m.record(st("elementwise", "correct_slow", speedup=1.0), PM, [], gain(1.5, 1.0), history=[MA],
                     task_id=f"ew{i}")
            m.record(st("elementwise", "correct_slow", speedup=1.0), MA, [], fail(), history=[MA], task_id=f"ew{i}")
        mem.record(st("normalization", "correct_slow", speedup=1.0), MA, [], gain(1.5, 1.0), history=[MA],
                   task_id=f"n{i}")
        mem.record(st("normalization", "correct_slow", speedup=1.0), PM, [], fail(), history=[MA], task_id=f"n{i}")
    ew, norm = st("elementwise", "correct_slow", speedup=1.0), st("normalization", "correct_slow", speedup=1.0)
    assert _top(mem, ew, history=[MA]) == PM
    assert _top(mem, norm, history=[MA]) == MA
    assert [(r.id, round(r.score, 9)) for r in mem.select_directions(ew, [MA])] == \
           [(r.id, round(r.score, 9)) for r in only_ew.select_directions(ew, [MA])]
    only_ew.close()


def test_tasks_recorded_concurrently_give_the_same_choices_as_one_after_another(tmp_path):
    """Four processes record interleaved classes into one memory folder at once; the result ranks exactly like
    the same events recorded by one process in order (statistics are sums: order and interleaving do not
    matter, and no writer loses an update)."""
    shared = tmp_path / "shared"
    HTAMemory(MemoryConfig(shared)).close()
    go = tmp_path / "go"
    script = Path(__file__).with_name("memory_worker.py")
    procs = [subprocess.Popen([sys.executable, str(script), "record_classes", str(shared), str(w), str(go)],
                              env=subprocess_env()) for w in range(4)]
    go.write_text("go")
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    sequential = _fresh(tmp_path, "sequential")
    from memory_worker import class_events  # tests/memory is on sys.path (pytest's rootdir-relative import)

    for w in range(4):
        for s, d, strategies, out, hist, uid in class_events(w):
            sequential.record(s, d, strategies, out, history=hist, uid=uid)
    together = HTAMemory(MemoryConfig(shared))
    assert together.transitions.count() == sequential.transitions.count() == 4 * 24
    for s in (st("elementwise", "correct_slow", speedup=1.0), st("normalization", "correct_slow", speedup=1.0),
              st("pooling", "correct_slow", speedup=1.0)):
        a = [(r.id, round(r.score, 9)) for r in together.select_directions(s, [MA])]
        b = [(r.id, round(r.score, 9)) for r in sequential.select_directions(s, [MA])]
        assert a == b
    assert _top(together, st("elementwise", "correct_slow", speedup=1.0), history=[MA]) == "launch_overhead"
    assert _top(together, st("normalization", "correct_slow", speedup=1.0), history=[MA]) == FR
    together.close()
    sequential.close()


# ---------------------------------------------------------------------------------------------- applicability


def test_reduction_strategies_never_go_to_ops_without_a_reduction(mem, embedding_model):
    gelu = st("elementwise", text="Reference ops: mul, pow, add, tanh. GELU")
    conv_act = st("fused", features=("convolution", "elementwise"), text="Reference ops: conv2d, relu, hardswish")
    pool = st("pooling", text="Reference ops: max_pool2d")
    for s in (gelu, conv_act, pool):
        for d in mem.directions:
            got = {r.strategy.id for r in mem.retrieve_strategies(d, s, k=3)}
            assert not got & REDUCTION_ONLY, (s.key.op_class, d, got)
            if s is not pool:
                assert "pm_block_reduce_shuffle" not in got and "pm_multi_row_per_block" not in got
    pm_gelu = [r.strategy.id for r in mem.retrieve_strategies(PM, gelu, k=3)]
    assert pm_gelu == ["pm_grid_stride_loop"]  # the only parallel-mapping strategy for elementwise work
    # a fused op that does contain a normalization gets the norm strategies, marked as for that part
    conv_gn = st("fused", features=("convolution", "normalization"), text="Reference ops: conv2d, group_norm")
    got = {r.strategy.id: r for r in mem.retrieve_strategies(FR, conv_gn, k=5)}
    assert "fr_welford_norm" in got and "fr_epilogue_fusion" in got


# ---------------------------------------------------------------------------------------------- no repeats


def test_step_one_does_not_offer_what_the_current_best_already_applies(mem, embedding_model):
    norm0 = st("normalization", text="LayerNorm over 4096 features")
    step0 = mem.retrieve_strategies(PM, norm0, k=3)
    applied = tuple(r.strategy.id for r in step0)
    task = TaskMemory((Attempt(PM, applied, improved=True, accepted=True, key=norm0.key, step=0,
                               became_best=True),))
    norm1 = st("normalization", "correct_slow", speedup=3.0, text="LayerNorm over 4096 features")
    step1 = mem.retrieve_strategies(PM, norm1, k=3, exclude=task.excluded_strategies(norm1.key))
    assert not {r.strategy.id for r in step1} & set(applied)
    # once every parallel-mapping strategy that fits is in the best, the direction steps back, and says why
    fitting = {s.id for s in mem.strategies().values() if s.direction == PM and s.fits("normalization", "cuda",
                                                                                      norm1.features)}
    spent = TaskMemory((Attempt(PM, tuple(sorted(fitting)), True, True, norm0.key, 0, True),))
    ranked = {r.id: r for r in mem.select_directions(norm1, [PM], task=spent)}
    assert ranked[PM].components["exhausted"] < 0 and "already in the current best" in ranked[PM].reason
    assert mem.retrieve_strategies(PM, norm1, k=3, exclude=spent.excluded_strategies(norm1.key)) == []
    assert mem.select_directions(norm1, [PM], task=spent)[0].id != PM


def test_a_direction_that_failed_twice_in_the_task_steps_aside(mem):
    s = st("elementwise", "correct_slow", speedup=1.1)
    assert _top(mem, s, history=[MA]) == MA
    twice = TaskMemory((Attempt(MA, (), True, True, s.key, 0, True), Attempt(MA, (), False, True, s.key, 1),
                        Attempt(MA, (), False, False, s.key, 2)))
    ranked = mem.select_directions(s, [MA, MA, MA], task=twice)
    by_id = {r.id: r for r in ranked}
    assert ranked[0].id != MA and by_id[MA].components["step_aside"] < 0
    assert "steps aside" in by_id[MA].reason and "did not improve" in by_id[MA].summary
    # a direction the coder was asked to take twice and both times applied another one steps aside too
    declined = TaskMemory((Attempt(PM, (), True, True, s.key, 0, True, asked=MA),
                           Attempt(PM, (), False, True, s.key, 1, asked=MA)))
    assert declined.declined_twice(MA) and not declined.declined_twice(PM) and not declined.failed_twice(MA)
    by_id = {r.id: r for r in mem.select_directions(s, [PM, PM], task=declined)}
    assert by_id[MA].components["step_aside"] < 0 and "declined twice" in by_id[MA].reason
    assert "applied another direction" in by_id[MA].summary
    once = TaskMemory((Attempt(PM, (), True, True, s.key, 0, True, asked=MA),
                       Attempt(MA, (), True, True, s.key, 1, True, asked=MA)))
    assert not once.declined_twice(MA)  # taken the second time: no penalty
    # a failed strategy is not offered again in the same state, but is in another one
    failed = TaskMemory((Attempt(MA, ("ma_vectorized_loads",), False, True, s.key, 1),))
    assert "ma_vectorized_loads" in failed.excluded_strategies(s.key)
    assert "ma_vectorized_loads" not in failed.excluded_strategies(StateKey("elementwise", "latency",
                                                                            "correct_slow", "cuda"))


def test_evidence_summary_speaks_in_counts_not_score_arithmetic(mem):
    for i in range(3):
        mem.record(st("normalization", text=f"t{i}"), PM, [], Outcome(True, "correct_slow", 1.5), task_id=f"t{i}")
    mem.record(st("normalization"), PM, [], fail(), task_id="t3")
    pm = next(r for r in mem.select_directions(st("normalization")) if r.id == PM)
    # three tasks' first kernels are baselines over eager, not improvements of parallel mapping
    assert ("in normalization tasks on cuda: 4 tries: 3 gave a task's first kernel (typical x1.50 over eager), "
            "0 improved the previous best, 1 rejected") in pm.summary
    # after a first kernel: gains over the previous best, said so, apart from the baselines
    later = st("normalization", "correct_slow", speedup=1.5)
    mem.record(later, PM, [], Outcome(True, "correct_slow", 3.0), history=[PM], task_id="t4")
    mem.record(later, PM, [], Outcome(True, "correct_slow", 1.2), history=[PM], task_id="t5")
    pm = next(r for r in mem.select_directions(later, [PM]) if r.id == PM)
    assert ("6 tries: 3 gave a task's first kernel (typical x1.50 over eager), 1 improved the previous best, "
            "1 accepted without a gain over it, 1 rejected; accepted after a first kernel: typical x1.26 over the "
            "previous best") in pm.summary  # exp of the mean of log 2.0 and log 0.8
    assert "prior 0." not in pm.summary and "->" not in pm.summary


# ---------------------------------------------------------------------------------------------- learned cards

KERNEL = '''
import torch
from torch.utils.cpp_extension import load_inline

src = r"""
__global__ void ln_fwd(const float* __restrict__ x, float* __restrict__ y, int n) {
    // one warp per row, Welford in registers, float4 loads
    int row = blockIdx.x;
    if (row < n) { y[row] = x[row]; }
}
torch::Tensor ln(torch::Tensor x) { return x; }
"""
ext = load_inline(name="ln", cpp_sources="torch::Tensor ln(torch::Tensor x);", cuda_sources=src, functions=["ln"])


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return ext.ln(x)
'''


@pytest.mark.slow  # fast lane: ~16 s, cards embedded
def test_accepted_kernel_becomes_a_card_for_the_same_class_and_backend_only(mem, tmp_path, embedding_model):
    before = st("normalization", "correct_slow", speedup=1.2, text="LayerNorm over 4096 features")
    assert mem.learn_card(before, PM, code=KERNEL, plan="x", speedup_after=1.25) is None  # under the margin
    card = mem.learn_card(before, PM, code=KERNEL, speedup_after=2.4, built_on=["pm_warp_per_row", "nope"],
                          plan="One warp per row with a Welford reduction in registers and float4 loads.",
                          task_id="40_LayerNorm", run_id="r1", step=1)
    assert card is not None and card.source == "learned"
    assert card.applicability.op_classes == ["normalization"] and card.applicability.backends == ["cuda"]
    assert "__global__ void ln_fwd" in card.code_sketch["cuda"] and "class ModelNew" not in card.code_sketch["cuda"]
    assert "Welford" in card.description and "x2.00" in card.title
    assert card.evidence["task"] == "40_LayerNorm" and card.tags == ["learned", "40_LayerNorm", "pm_warp_per_row"]
    again = mem.learn_card(before, PM, code=KERNEL, plan="same kernel", speedup_after=2.4, task_id="40_LayerNorm")
    assert again is not None and again.id == card.id and len(mem.learned_cards()) == 1  # learned once

    later = st("normalization", text="RMSNorm over 8192 features")
    hits = mem.retrieve_strategies(PM, later, k=3)
    assert card.id in [r.strategy.id for r in hits]
    assert [r.strategy.id for r in hits if r.strategy.source == "seed"]  # cards add to the techniques
    for other in (st("elementwise", text="GELU with a Welford"), st("reduction", text="LayerNorm-like row sum"),
                  st("normalization", backend="triton", text="LayerNorm over 4096 features")):
        for d in mem.directions:
            assert card.id not in [r.strategy.id for r in mem.retrieve_strategies(d, other, k=5)], (other, d)
    assert card.id not in [r.strategy.id for r in mem.retrieve_strategies(None, st("pooling"), k=8)]

    # `htam memory show` lists it with its evidence; export/import carries it to another memory
    out = CliRunner().invoke(app, ["--dir", str(mem.config.data_dir), "show", "--what", "learned"],
                             env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    assert card.id in out.output and "40_LayerNorm step 1" in out.output and "1.20x -> 2.40x" in out.output
    path = tmp_path / "export.json.gz"
    assert mem.export(path)["learned_strategies"] == 1
    other = _fresh(tmp_path, "other")
    assert other.import_file(path).learned_strategies == 1
    (got,) = other.learned_cards()
    assert got == card
    assert card.id in [r.strategy.id for r in other.retrieve_strategies(PM, later, k=3)]
    other.close()


def test_first_kernel_over_eager_is_a_card_too(mem):
    card = mem.learn_card(st("elementwise"), MA, code=KERNEL, plan="float4 loads", speedup_after=1.6,
                          task_id="gelu")
    assert card is not None and "(1.00x -> 1.60x over eager)" in card.expected_effect
    with pytest.raises(ValueError, match="unknown direction"):
        mem.learn_card(st("elementwise"), "warp_magic", code=KERNEL, plan="", speedup_after=2.0)


def test_the_task_record_in_words_does_not_call_the_first_kernel_an_improvement(mem):
    """What a model reads about this task: the first kernel is a baseline over eager (there was nothing to
    improve on, it may be slower than eager), a kernel of the same step that lost to it is not an improvement,
    and a later gain is over the previous best, said so."""
    s = st("normalization", "correct_slow", speedup=0.9)
    task = TaskMemory((Attempt(MA, (), False, True, s.key, 0, True, asked=MA, baseline=True, speedup=0.6),
                       Attempt(PM, (), False, True, s.key, 0, False, asked=PM, baseline=True, speedup=0.4),
                       Attempt(MA, (), True, True, s.key, 1, True, asked=MA, speedup=0.9, vs_best=1.5)))
    by_id = {r.id: r for r in mem.select_directions(s, [MA, MA], task=task)}
    assert ("in this task: step 0 gave the task's first kernel, x0.60 over eager (a baseline, not a gain), "
            "step 1 improved the previous best (x1.50 over it)") in by_id[MA].summary
    assert "in this task: step 0 accepted, x0.40 over eager, slower than that step's first kernel" in \
        by_id[PM].summary
    assert not task.failed_twice(PM) and not task.gained(PM) and task.gained(MA)
