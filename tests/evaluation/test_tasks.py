"""Task loading: KernelBench files and folders, sizes, and errors that name the file and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_agent.evaluation.tasks import TaskError, load_task, load_tasks, task_paths

GOOD = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
    def forward(self, x):
        return x * self.scale

batch_size = 1 << 40  # a GPU size no CPU test could allocate: loading must not draw it
dim = 8
def get_inputs():
    return [torch.randn(batch_size, dim)]
def get_init_inputs():
    return [2.0]
SMALL_SIZES = {"batch_size": 4}
ALT_SIZES = {"batch_size": 3, "dim": 5}
'''


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_sizes_override_globals_without_touching_the_file(tmp_path):
    p = write(tmp_path, "t.py", GOOD)
    task = load_task(p)  # default size is validated on the meta device: nothing allocated
    assert task.sizes == ("default", "small", "alt")
    small = load_task(p, size="small")
    assert small.get_inputs()[0].shape == (4, 8)
    alt = small.at_size("alt")
    assert alt.get_inputs()[0].shape == (3, 5)
    assert small.get_inputs()[0].shape == (4, 8), "sizes leaked between loads"
    model = small.model_cls(*small.get_init_inputs())
    x = small.get_inputs()[0]
    assert (model(x) == 2 * x).all()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("def f(:\n", "syntax error at line 1"),
        ("import not_a_module_xyz\n", "No module named 'not_a_module_xyz'"),
        ("import torch\ndef get_inputs(): return [torch.zeros(1)]\n", "no `Model` class"),
        ("import torch\nclass Model(torch.nn.Module): pass\n", "no `get_inputs()` function"),
        ("import torch\nclass Model(torch.nn.Module): pass\ndef get_inputs(): return [1, 2]\n", "returned no tensor"),
        ("import torch\nclass Model(torch.nn.Module): pass\ndef get_inputs(): return torch.zeros(1)\n",
         "must return a list"),
        ("import torch\nclass Model(torch.nn.Module): pass\ndef get_inputs(): return [torch.zeros(1), object()]\n",
         "inputs must be tensors or Python scalars"),
        ("import torch\nclass Model: pass\ndef get_inputs(): return [torch.zeros(1)]\n", "not an nn.Module"),
        ("import torch\nclass Model(torch.nn.Module): pass\ndef get_inputs(): return [torch.zeros(n)]\n",
         "NameError"),
    ],
)
def test_malformed_files_name_the_file_and_the_problem(tmp_path, text, expected):
    p = write(tmp_path, "bad_task.py", text)
    with pytest.raises(TaskError) as err:
        load_task(p)
    assert str(p) in str(err.value)
    assert expected in str(err.value)


def test_missing_size_dict_is_derived_and_the_other_dict_still_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_SIZES_DIR", str(tmp_path / "sizes"))
    p = write(tmp_path, "t.py", GOOD.replace("SMALL_SIZES", "OTHER"))
    task = load_task(p)
    assert task.sizes == ("default", "small", "alt")
    small = task.at_size("small")
    b, d = small.get_inputs()[0].shape
    assert d == 8 and 2 <= b < 1 << 40 and b * d * 4 <= 16 << 20  # dim=8 is kept; batch_size shrinks
    assert small.get_inputs()[0].shape == (b, 8)
    assert task.at_size("alt").get_inputs()[0].shape == (3, 5)  # ALT_SIZES is explicit: it wins


def test_missing_size_dict_that_cannot_be_derived_is_explained(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_SIZES_DIR", str(tmp_path / "sizes"))
    text = GOOD.replace("SMALL_SIZES", "OTHER").replace("torch.randn(batch_size, dim)", "torch.randn(1 << 40, 8)")
    p = write(tmp_path, "t.py", text)
    with pytest.raises(TaskError) as err:
        load_task(p, size="small")
    assert str(p) in str(err.value) and "defines no `SMALL_SIZES`" in str(err.value)
    # get_inputs() reads no global (its sizes are literals), so the fix names the globals to make first
    assert "make the input sizes module-level globals that get_inputs() reads, and add SMALL_SIZES = {" \
        in str(err.value), str(err.value)


def test_size_dict_naming_unknown_global(tmp_path):
    p = write(tmp_path, "t.py", GOOD.replace('{"batch_size": 4}', '{"batch": 4}'))
    with pytest.raises(TaskError, match="'batch', which is not a module-level global"):
        load_task(p, size="small")


def test_folder_loads_in_kernelbench_order_and_gathers_errors(tmp_path):
    for name in ("10_b.py", "2_a.py", "1_c.py"):
        write(tmp_path, name, GOOD)
    assert [p.name for p in task_paths(tmp_path)] == ["1_c.py", "2_a.py", "10_b.py"]
    assert len(load_tasks(tmp_path)) == 3
    write(tmp_path, "3_broken.py", "def f(:\n")
    with pytest.raises(TaskError) as err:
        load_tasks(tmp_path)
    assert "1 of 4 task files failed" in str(err.value) and "3_broken.py" in str(err.value)


def test_bundled_suite_loads_at_every_size():
    from htam_agent.bundled_tasks import suite_files

    files = suite_files()
    assert len(files) >= 24
    for size in ("default", "small", "alt"):
        assert len(load_tasks(files[0].parent, size=size)) == len(files)
