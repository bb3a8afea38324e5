"""Pattern recognition on every suite task: covered tasks get their family, the rest a clear UnsupportedTask."""

from __future__ import annotations

import subprocess
import sys

import pytest
from exemplar_helpers import COVERED, UNSUPPORTED, task_source

from htam_agent.bundled_tasks import suite_files
from htam_agent.coder.base import UnsupportedTask
from htam_agent.coder.exemplar.patterns import recognize


def test_every_suite_task_is_classified():
    stems = {p.stem for p in suite_files()}
    assert stems == set(COVERED) | set(UNSUPPORTED), "a suite task was added or removed: update exemplar_helpers"


@pytest.mark.parametrize("stem", sorted(COVERED))
def test_covered_task_family(stem: str):
    pattern = recognize(task_source(stem), stem)
    assert pattern.family == COVERED[stem]
    assert pattern.init_source.lstrip().startswith("def __init__")


@pytest.mark.parametrize("stem", UNSUPPORTED)
def test_unsupported_task_says_so_and_how_to_configure_an_llm(stem: str):
    with pytest.raises(UnsupportedTask) as info:
        recognize(task_source(stem), stem)
    msg = str(info.value)
    assert f"task {stem!r} is not supported" in msg
    for hint in ("HTAM_MODEL", "HTAM_BASE_URL", "OPENAI_API_KEY", "--model", "--base-url"):
        assert hint in msg


def test_details_of_recognised_patterns():
    p = recognize(task_source("fused_conv2d_bias_relu"), "t")
    assert p.prefix is not None and p.prefix.kind == "conv" and p.prefix.bias_axis == -3
    assert [s.op for s in p.chain.steps] == ["add", "relu"]
    assert [(o.expr, o.kind, o.axis) for o in p.chain.operands] == [("y", "full", -1), ("self.bias", "axis", -3)]
    p = recognize(task_source("norm_rmsnorm"), "t")
    assert (p.row_op, p.row_weight, p.row_eps) == ("rmsnorm", "self.weight", "float(self.eps)")
    p = recognize(task_source("fused_gemm_layernorm_gelu"), "t")
    assert p.row_op == "layernorm" and p.prefix.kind == "linear" and [s.op for s in p.chain.steps] == ["gelu"]
    assert recognize(task_source("matmul_batched"), "t").mm_batched


def test_constructor_scalars_are_read_at_run_time_not_baked():
    """Cheat pattern 12 (constants baked from init arguments) must not be in our own candidates."""
    p = recognize(task_source("elementwise_hardtanh_scale"), "t")
    assert p.chain.scalars == ("float(self.min_val)", "float(self.max_val)", "float(self.scale)")
    assert not any(a[0] == "lit" for s in p.chain.steps for a in s.args)
    p = recognize(task_source("elementwise_leaky_relu"), "t")
    assert p.chain.scalars == ("float(self.negative_slope)",)
    assert recognize(task_source("fused_gemm_relu_divide"), "t").chain.scalars == ("float(self.divisor)",)


UNTRACEABLE = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow: torch.fx cannot trace this
            return torch.relu(x)
        return x * 2.0

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return []
'''

DERIVED_CONSTANT = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, divisor):
        super().__init__()
        self.divisor = divisor

    def forward(self, x):
        return torch.relu(x) * (1.0 / self.divisor)

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return [2.0]
'''


def test_untraceable_forward_is_unsupported_with_reason():
    with pytest.raises(UnsupportedTask, match="torch.fx could not trace"):
        recognize(UNTRACEABLE, "untraceable")


def test_constant_derived_from_init_args_is_refused_not_baked():
    with pytest.raises(UnsupportedTask, match="computed from constructor arguments"):
        recognize(DERIVED_CONSTANT, "derived")


def test_import_is_cheap():
    """Importing the coder, its CLI and the coder class must not import torch (only tracing a task does)."""
    code = ("import sys, htam_agent.coder.exemplar as e, htam_agent.cli.exemplar; "
            "e.ExemplarCoder, e.enumerate_candidates; print('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr
