"""Sizes for any file: 'small' and 'alt' derived for KernelBench-style files that carry no size dicts.

Every file here is written in the test, the way KernelBench writes its problems (GPU sizes, no dicts); each
derivation really runs the reference on the meta device (and on the CPU where meta cannot).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_agent.evaluation.tasks import TaskError, has_size, load_task, load_task_source, sizes

RELU = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.relu(x)

batch_size = 4096
dim = 393216

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return []
'''

CONV = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, groups=groups)
        self.bias = nn.Parameter(torch.randn(bias_shape))
    def forward(self, x):
        return torch.relu(self.conv(x)) + self.bias

batch_size = 64
in_channels = 128
out_channels = 256
kernel_size = 3
groups = GROUPS
height = width = 256
bias_shape = (out_channels, 1, 1)

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, groups, bias_shape]
'''

ATTENTION = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]

batch_size = 32
seq_len = 1024
embed_dim = 1536
num_heads = 12

def get_inputs():
    return [torch.rand(batch_size, seq_len, embed_dim)]

def get_init_inputs():
    return [embed_dim, num_heads]
'''

LITERALS = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 2

def get_inputs():
    return [torch.rand(8192, 262144)]

def get_init_inputs():
    return []
'''

DATA_DEPENDENT = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        t = x.mean().item()          # the meta device cannot run this: the CPU must
        return torch.where(x > t, x, torch.zeros_like(x))

rows = 8192
cols = 65536

def get_inputs():
    return [torch.rand(rows, cols)]

def get_init_inputs():
    return []
'''


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_SIZES_DIR", str(tmp_path / "sizes_cache"))
    monkeypatch.setattr(sizes, "_memo", {})


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def shape(task, i: int = 0) -> tuple[int, ...]:
    return tuple(task.get_inputs()[i].shape)


def is_pow2(n: int) -> bool:
    return n & (n - 1) == 0


def test_relu_sizes_shrink_to_the_budget_and_alt_is_odd(tmp_path):
    p = write(tmp_path, "19_relu.py", RELU)
    task = load_task(p)
    assert task.sizes == ("default", "small", "alt")
    small = task.at_size("small")
    b, d = shape(small)
    assert 4096 % b == 0 and 393216 % d == 0, "halving keeps the default's factors"
    assert b >= 2 and d >= 8
    nbytes = b * d * 4
    assert nbytes <= sizes.MAX_INPUT_BYTES
    assert nbytes * 4 > sizes.MAX_INPUT_BYTES / 4, "shrunk far past the budget"
    report = sizes.derive_sizes(p.read_text(), p)
    assert report["small"]["est_ms"] <= sizes.BUDGET_MS
    assert report["small"]["cpu_ms"] is not None and report["small"]["cpu_error"] is None
    assert report["small"]["inputs"] == [f"float32[{b}, {d}]"]
    ab, ad = shape(task.at_size("alt"))
    assert (ab, ad) != (b, d)
    assert ab % 2 == 1 and ad % 2 == 1, (ab, ad)
    assert abs(ab - b) <= 5 and abs(ad - d) <= 5
    x = small.get_inputs()[0]
    assert (small.model_cls()(x) == x.clamp(min=0)).all()


@pytest.mark.parametrize("groups", [4, 16])
def test_conv_keeps_groups_kernel_and_recomputes_dependent_globals(tmp_path, groups):
    p = write(tmp_path, "conv.py", CONV.replace("GROUPS", str(groups)))
    report = sizes.derive_sizes(p.read_text(), p)
    assert report["problems"] == {"small": None, "alt": None}
    assert "kernel_size" in report["kept"] and "bias_shape" in report["kept"]
    for size in ("small", "alt"):
        t = load_task(p, size=size)
        m = t.module
        assert m.kernel_size == 3, "a kernel size is not a size to scale"
        assert m.in_channels % m.groups == 0 and m.out_channels % m.groups == 0, (size, m.groups)
        assert m.bias_shape == (m.out_channels, 1, 1), "bias_shape recomputed from out_channels"
        assert m.height >= m.kernel_size and m.width >= m.kernel_size
        n, c, h, w = shape(t)
        assert (n, c, h, w) == (m.batch_size, m.in_channels, m.height, m.width)
        model = t.model_cls(*t.get_init_inputs())
        assert model(t.get_inputs()[0]).shape == (n, m.out_channels, h - 2, w - 2)
    small, alt = load_task(p, size="small").module, load_task(p, size="alt").module
    assert small.in_channels < 128 or small.height < 256
    assert (small.batch_size, small.height, small.width) != (alt.batch_size, alt.height, alt.width)
    assert alt.height % 2 == 1 and alt.width % 2 == 1 and alt.batch_size % 2 == 1
    # channels must stay multiples of groups, so they move to non-power-of-two multiples instead of odd values
    assert alt.in_channels != small.in_channels and not is_pow2(alt.in_channels)


def test_attention_heads_keep_dividing_the_embedding(tmp_path):
    p = write(tmp_path, "attn.py", ATTENTION)
    for size in ("small", "alt"):
        t = load_task(p, size=size)
        m = t.module
        assert m.embed_dim % m.num_heads == 0, (size, m.embed_dim, m.num_heads)
        out = t.model_cls(*t.get_init_inputs())(t.get_inputs()[0])
        assert out.shape == (m.batch_size, m.seq_len, m.embed_dim)
    small, alt = load_task(p, size="small").module, load_task(p, size="alt").module
    assert small.seq_len < 1024 and small.embed_dim < 1536
    assert alt.seq_len % 2 == 1 and alt.batch_size % 2 == 1
    assert alt.embed_dim != small.embed_dim and not is_pow2(alt.embed_dim)


def test_a_size_that_is_odd_already_moves_to_another_odd_value(tmp_path):
    text = (RELU.replace("torch.relu(x)", "x.sum(dim=1)").replace("dim = 393216", "dim = 4095")
            .replace("batch_size = 4096", "batch_size = 16"))
    p = write(tmp_path, "47_sum.py", text)
    small, alt = load_task(p, size="small").module, load_task(p, size="alt").module
    assert small.dim % 2 == 1, "halving 4095 keeps it odd: the case under test"
    assert alt.dim % 2 == 1 and alt.dim != small.dim and abs(alt.dim - small.dim) <= 6
    assert alt.batch_size % 2 == 1


def test_literal_sizes_cannot_be_derived_and_the_message_says_what_to_add(tmp_path):
    p = write(tmp_path, "literal.py", LITERALS)
    task = load_task(p)
    assert task.sizes == ("default",)
    assert not has_size(p.read_text(), "small", p)
    with pytest.raises(TaskError) as err:
        load_task(p, size="small")
    msg = str(err.value)
    assert str(p) in msg and "SMALL_SIZES" in msg and "literals" in msg


def test_explicit_dicts_win_without_any_derivation(tmp_path, monkeypatch):
    text = RELU + 'SMALL_SIZES = {"batch_size": 4, "dim": 64}\nALT_SIZES = {"batch_size": 3, "dim": 77}\n'
    p = write(tmp_path, "explicit.py", text)

    def no_derivation(*a, **k):
        raise AssertionError("a file with both dicts must not be derived")

    monkeypatch.setattr(sizes, "_derive", no_derivation)
    task = load_task(p)
    assert task.sizes == ("default", "small", "alt")
    assert shape(task.at_size("small")) == (4, 64)
    assert shape(task.at_size("alt")) == (3, 77)
    assert has_size(text, "small", p) and has_size(text, "alt", p)


def test_one_explicit_dict_wins_and_the_other_size_is_derived(tmp_path):
    p = write(tmp_path, "half.py", RELU + 'SMALL_SIZES = {"batch_size": 4, "dim": 64}\n')
    task = load_task(p)
    assert task.sizes == ("default", "small", "alt")
    assert shape(task.at_size("small")) == (4, 64)
    ab, ad = shape(task.at_size("alt"))
    assert ab % 2 == 1 and ad % 2 == 1


def test_derivation_is_deterministic_and_cached_by_content(tmp_path, monkeypatch):
    p = write(tmp_path, "conv.py", CONV.replace("GROUPS", "4"))
    src = p.read_text()
    first = sizes.derive_sizes(src, p, use_cache=False, measure=False)
    second = sizes.derive_sizes(src, p, use_cache=False, measure=False)
    for size in ("small", "alt"):
        assert first[size]["overrides"] == second[size]["overrides"]
        assert first[size]["inputs"] == second[size]["inputs"]
    files = list((tmp_path / "sizes_cache").glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["small"]["overrides"] == first["small"]["overrides"]

    monkeypatch.setattr(sizes, "_memo", {})  # a new process: only the file remains

    def no_derivation(*a, **k):
        raise AssertionError("derived again despite the cache")

    monkeypatch.setattr(sizes, "_derive", no_derivation)
    hit = sizes.derive_sizes(src, p, measure=False)
    assert hit["cached"] is True and hit["small"]["overrides"] == first["small"]["overrides"]
    with pytest.raises(AssertionError, match="derived again"):  # another content is another key
        sizes.derive_sizes(src + "\n# edited\n", p, measure=False)


def test_an_unwritable_cache_does_not_break_derivation(tmp_path, monkeypatch):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    monkeypatch.setenv("HTAM_SIZES_DIR", str(blocker / "sizes"))
    p = write(tmp_path, "19_relu.py", RELU)
    assert load_task(p, size="small").get_inputs()[0].numel() * 4 <= sizes.MAX_INPUT_BYTES


def test_a_model_meta_cannot_run_falls_back_to_the_cpu(tmp_path):
    p = write(tmp_path, "dd.py", DATA_DEPENDENT)
    report = sizes.derive_sizes(p.read_text(), p)
    assert report["default"]["status"] == "unchecked" and "meta" in report["default"]["error"]
    assert report["small"]["mode"] == "cpu" and report["alt"]["mode"] == "cpu"
    rows, cols = load_task(p, size="small").module.rows, load_task(p, size="small").module.cols
    assert rows * cols * 4 <= sizes.MAX_INPUT_BYTES
    alt = load_task(p, size="alt").module
    assert alt.rows % 2 == 1 and alt.cols % 2 == 1


def test_a_worker_applies_overrides_from_its_parent_without_deriving(tmp_path, monkeypatch):
    p = write(tmp_path, "19_relu.py", RELU)
    derived = sizes.derived_overrides(p.read_text(), p)
    json.dumps(derived)  # travels in a job file
    monkeypatch.setattr(sizes, "_memo", {})

    def no_derivation(*a, **k):
        raise AssertionError("the worker derived on its own")

    monkeypatch.setattr(sizes, "_derive", no_derivation)
    monkeypatch.setenv("HTAM_SIZES_DIR", str(tmp_path / "empty_cache"))
    task = load_task_source(p.read_text(), p, size="small", derived=derived)
    assert "alt" in task.sizes
    alt = task.at_size("alt")
    assert shape(alt) != shape(task) and shape(alt)[0] % 2 == 1


READS = '''
import torch
import torch.nn as nn

class Block(nn.Module):
    def __init__(self, hidden=16):        # a parameter named like a global is a local, not a read
        super().__init__()
        self.lin = nn.Linear(hidden, hidden)
    def forward(self, x):
        return self.lin(x[:, ::stride]).repeat(1, stride)  # back to 16 * stride columns

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range(num_layers)])
    def forward(self, x):
        return self.blocks(x)

hidden = 4096
unused_size = 1 << 20
stride = 64
num_layers = 32
rows = 65536

def make(n):
    return torch.rand(n, 16 * stride)

def get_inputs():
    return [make(rows)]

def get_init_inputs():
    return []
'''


def test_size_globals_are_what_the_reference_reads(tmp_path):
    p = write(tmp_path, "reads.py", READS)
    report = sizes.derive_sizes(p.read_text(), p, measure=False)
    assert [s["global"] for s in report["slots"]] == ["rows"], report["slots"]  # read through make()
    assert "stride" in report["kept"] and "num_layers" in report["kept"]  # read, but hyper-parameters
    assert "hidden" not in report["kept"] and "unused_size" not in report["kept"]
    t = load_task(p, size="small")
    assert t.module.stride == 64 and t.module.num_layers == 32 and t.module.hidden == 4096
    assert shape(t)[0] < 65536


def test_cli_prints_globals_shapes_and_why(tmp_path):
    from typer.testing import CliRunner

    from htam_agent.cli import app

    good, bad = write(tmp_path, "19_relu.py", RELU), write(tmp_path, "literal.py", LITERALS)
    result = CliRunner().invoke(app, ["tasks", "sizes", str(good), str(bad)])
    out = result.output
    assert result.exit_code == 1, out  # one file has no small size
    assert "size globals: batch_size=4096 (floor 2), dim=393216 (floor 8)" in out
    small = load_task(good, size="small")
    assert f"batch_size={small.module.batch_size} dim={small.module.dim}" in out
    assert f"float32[{small.module.batch_size}, {small.module.dim}]" in out
    assert "why: Halved" in out and "why: Moved" in out
    assert "literal.py" in out and "SMALL_SIZES" in out
