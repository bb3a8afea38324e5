"""Methods as RunContext overrides at equal evaluation budget; suite resolution (bundled, KernelBench)."""

from __future__ import annotations

import pytest

from htam_agent.bench.methods import METHODS, MethodError, get_methods, max_evaluations
from htam_agent.bench.suite import SuiteError, operator_class, parse_levels, resolve_suite
from htam_agent.context import RunContext

TASK = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n" \
       "def get_inputs():\n    return [torch.randn(4)]\n"


@pytest.mark.parametrize("budget", [1, 2, 3, 4, 5, 6, 7, 8, 12])
def test_every_budgeted_method_has_the_same_evaluation_cap(budget):
    base = RunContext(backend="cpp", max_repairs=2)
    for m in METHODS.values():
        ctx = m.context(base, budget)
        assert max_evaluations(ctx) == (budget if m.uses_budget else 1), m.name


def test_method_switches():
    base = RunContext(backend="cpp", memory_mode="none", direction_policy="first", use_strategies=False)
    ctx = {name: m.context(base, 6) for name, m in METHODS.items()}
    assert ctx["htam"].memory_mode == "htam" and ctx["htam"].use_strategies and ctx["htam"].use_transitions
    assert ctx["htam"].direction_policy == "htam"
    assert ctx["refine"].memory_mode == "none" and ctx["refine"].steps == 6 and ctx["refine"].max_evaluations == 6
    assert ctx["flat-memory"].memory_mode == "flat"
    assert (ctx["one-shot"].steps, ctx["one-shot"].candidates, ctx["one-shot"].max_repairs) == (1, 1, 0)
    assert (ctx["best-of-n"].steps, ctx["best-of-n"].candidates, ctx["best-of-n"].max_repairs) == (1, 6, 0)
    assert ctx["random-direction"].direction_policy == "random"
    assert not ctx["htam-no-strategies"].use_strategies and ctx["htam-no-strategies"].use_transitions
    assert not ctx["htam-no-transitions"].use_transitions and ctx["htam-no-transitions"].use_strategies
    assert "method:htam" in ctx["htam"].tags and ctx["htam"].backend == "cpp"
    assert not METHODS["htam"].context(base.with_(interactive=True), 6).interactive


def test_get_methods_errors_and_order():
    assert [m.name for m in get_methods("refine, htam,refine")] == ["refine", "htam"]
    with pytest.raises(MethodError, match="unknown method.*'nope'"):
        get_methods(["htam", "nope"])
    with pytest.raises(MethodError):
        get_methods("")
    with pytest.raises(MethodError):
        METHODS["htam"].context(RunContext(backend="cpp"), 0)


def test_bundled_suite_categories_and_filter():
    tasks = resolve_suite("bundled")
    assert len(tasks) == 30 and {t.level for t in tasks} == {"suite"}
    cat = {t.id: t.category for t in tasks}
    assert cat["elementwise_swish"] == "elementwise" and cat["fused_gemm_bias_gelu"] == "fused"
    assert cat["conv_conv2d"] == "convolution" and cat["norm_softmax"] == "normalization"
    assert cat["pool_maxpool2d"] == "pooling" and cat["matmul_square"] == "matmul"
    sel = resolve_suite("bundled", task_filter="norm_*,row_sum")
    assert [t.id for t in sel] == ["norm_layernorm", "norm_log_softmax", "norm_rmsnorm", "norm_softmax",
                                   "reduction_row_sum"]
    assert len(resolve_suite("bundled", limit=3)) == 3
    with pytest.raises(SuiteError, match="matches no task"):
        resolve_suite("bundled", task_filter="zzz")
    with pytest.raises(SuiteError, match="no levels"):
        resolve_suite("bundled", levels="1")


def _checkout(root):
    for level, names in {"level1": ["1_Square_matrix_multiplication_.py", "23_Softmax.py", "10_ReLU.py",
                                    "2_Max_Pooling_2D.py"],
                         "level2": ["1_Conv2D_ReLU_BiasAdd.py"], "level3": ["1_MLP.py"]}.items():
        d = root / "KernelBench" / level
        d.mkdir(parents=True)
        for n in names:
            (d / n).write_text(TASK)
    return root


def test_kernelbench_checkout_levels(tmp_path):
    root = _checkout(tmp_path / "kb")
    tasks = resolve_suite(str(root))
    assert [t.id for t in tasks][:4] == ["level1/1_Square_matrix_multiplication_", "level1/2_Max_Pooling_2D",
                                         "level1/10_ReLU", "level1/23_Softmax"]  # numeric order
    cat = {t.id: t.category for t in tasks}
    assert cat == {"level1/1_Square_matrix_multiplication_": "matmul", "level1/2_Max_Pooling_2D": "pooling",
                   "level1/10_ReLU": "elementwise", "level1/23_Softmax": "normalization",
                   "level2/1_Conv2D_ReLU_BiasAdd": "fused", "level3/1_MLP": "model"}
    assert {t.suite for t in tasks} == {"kb"}
    assert [t.id for t in resolve_suite(str(root), levels="2-3")] == ["level2/1_Conv2D_ReLU_BiasAdd", "level3/1_MLP"]
    assert len(resolve_suite(str(root / "KernelBench" / "level1"))) == 4  # a level folder on its own
    with pytest.raises(SuiteError, match="no level 7"):
        resolve_suite(str(root), levels="1,7")
    with pytest.raises(SuiteError, match="bad level"):
        parse_levels("one")
    with pytest.raises(SuiteError, match="bad level range"):
        parse_levels("3-1")
    with pytest.raises(SuiteError, match="no .py task files"):
        (tmp_path / "empty").mkdir()
        resolve_suite(str(tmp_path / "empty"))
    with pytest.raises(SuiteError, match="no such folder"):
        resolve_suite(str(tmp_path / "missing"))


def test_operator_class_keywords():
    assert operator_class("95_CrossEntropyLoss", "level1") == "reduction"
    assert operator_class("89_cumsum", "level1") == "scan"
    assert operator_class("40_LayerNorm", "level1") == "normalization"
    assert operator_class("54_conv_standard_3D", "level1") == "convolution"
    assert operator_class("97_ScaledDotProductAttention", "level1") == "attention"
    assert operator_class("99_Something", "level1") == "other"
