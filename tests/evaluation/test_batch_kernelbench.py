"""`python -m htam_agent.evaluation batch` on KernelBench-format folders as they are.

The task files here are written by the test in KernelBench's format (module-level size globals read by
`get_inputs`, `torch.rand` inputs, no SMALL_SIZES / ALT_SIZES); no KernelBench file is used.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.kernelbench_files import RELU, TINY_MLP

from htam_agent.bundled_tasks import CANDIDATES_DIR
from htam_agent.evaluation.parent.commands import BatchError, _pairs, main

SCALE = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, factor):
        super(Model, self).__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor

n = 1024
factor = 2.5

def get_inputs():
    return [torch.rand(n, n)]

def get_init_inputs():
    return [factor]
'''

# ReLU as the bundled naive LeakyReLU's extension with slope 0, loaded exactly as that candidate builds it (name,
# source, flags): the default run builds it before this file (test_baseline_record), so this batch builds nothing.
CPP_RELU = (CANDIDATES_DIR / "elementwise_leaky_relu" / "cpp_naive.py").read_text().split("\nclass ModelNew")[0] + '''
class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        return _ext.leaky_relu_forward(x.contiguous(), 0.0)
'''
assert "_ext = load_inline(" in CPP_RELU, "the bundled naive LeakyReLU no longer builds `_ext` as this file expects"


# The whole model with its ReLUs in the C++ kernel (the Linear layers stay PyTorch's, created in the same order
# as the reference's so both get the same weights), with the ReLU candidate's extension.
CPP_MLP = CPP_RELU.split("class ModelNew")[0] + '''
class ModelNew(nn.Module):
    def __init__(self, input_size, layer_sizes, output_size):
        super(ModelNew, self).__init__()
        layers, current = [], input_size
        for size in layer_sizes:
            layers.append(nn.Linear(current, size))
            current = size
        layers.append(nn.Linear(current, output_size))
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = _ext.leaky_relu_forward(layer(x).contiguous(), 0.0)
        return self.layers[-1](x)
'''


def _checkout(root: Path) -> Path:
    """root/KernelBench/level1 (two problems), level2 (one): what a KernelBench clone looks like."""
    kb = root / "KernelBench"
    (kb / "level1").mkdir(parents=True)
    (kb / "level2").mkdir()
    (kb / "level1" / "19_ReLU.py").write_text(RELU)
    (kb / "level1" / "5_Scale.py").write_text(SCALE)
    (kb / "level2" / "1_Scale.py").write_text(SCALE)
    (kb / "level3").mkdir()
    (kb / "level3" / "1_TinyMLP.py").write_text(TINY_MLP)
    return kb


def _ns(**kw) -> argparse.Namespace:
    base = {"pairs": None, "tasks": None, "candidates": None, "backend": None, "levels": None}
    return argparse.Namespace(**{**base, **kw})


def _cand(folder: Path, name: str, text: str = CPP_RELU) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


def test_level_folder_finds_candidates_in_all_three_layouts(tmp_path, capsys):
    kb = _checkout(tmp_path)
    cands = tmp_path / "cands"
    a = _cand(cands / "19_ReLU", "cpp_a.py")                 # the bundled layout
    b = _cand(cands / "level1_19_ReLU", "cpp_b.py")          # what benchmarks/exemplar_kernelbench.py writes
    c = _cand(cands / "level1" / "5_Scale", "cpp_c.py")      # one folder per level
    _cand(cands / "19_ReLU", "cuda_x.py")                    # another backend: not taken with --backend cpp
    _cand(cands / "19_ReLU", "_helper.py")                   # private helper: never a candidate
    pairs = _pairs(_ns(tasks=str(kb / "level1"), candidates=str(cands), backend="cpp"))
    assert sorted(pairs) == sorted([(str(kb / "level1" / "19_ReLU.py"), str(a)),
                                    (str(kb / "level1" / "19_ReLU.py"), str(b)),
                                    (str(kb / "level1" / "5_Scale.py"), str(c))])
    # numeric problem order, as KernelBench numbers them (5 before 19)
    assert [Path(t).name for t, _ in pairs][0] == "5_Scale.py"
    # without --backend every .py candidate is taken
    assert len(_pairs(_ns(tasks=str(kb / "level1"), candidates=str(cands)))) == 4
    assert capsys.readouterr().err == ""  # every task had a candidate: no note


def test_checkout_root_and_levels(tmp_path, capsys):
    kb = _checkout(tmp_path)
    cands = tmp_path / "cands"
    _cand(cands / "level1_19_ReLU", "cpp_a.py")
    _cand(cands / "level2_1_Scale", "cpp_b.py")
    both = _pairs(_ns(tasks=str(tmp_path), candidates=str(cands), backend="cpp"))  # the clone's root
    assert sorted(Path(t).parent.name for t, _ in both) == ["level1", "level2"]  # level3: no candidate
    only2 = _pairs(_ns(tasks=str(kb), candidates=str(cands), backend="cpp", levels="2"))
    assert [(Path(t).parent.name, Path(c).name) for t, c in only2] == [("level2", "cpp_b.py")]
    assert "1 of 1" not in capsys.readouterr().err
    with pytest.raises(BatchError, match="no level4 folder; it has level1, level2, level3"):
        _pairs(_ns(tasks=str(kb), candidates=str(cands), levels="1,4"))
    with pytest.raises(BatchError, match="--levels needs --tasks to be a KernelBench checkout"):
        _pairs(_ns(tasks=str(kb / "level1"), candidates=str(cands), levels="1"))


def test_tasks_without_candidates_are_named(tmp_path, capsys):
    kb = _checkout(tmp_path)
    cands = tmp_path / "cands"
    _cand(cands / "19_ReLU", "cpp_a.py")
    pairs = _pairs(_ns(tasks=str(kb / "level1"), candidates=str(cands), backend="cpp"))
    assert len(pairs) == 1
    err = capsys.readouterr().err
    assert "1 of 2 task(s) have no candidate" in err and "5_Scale" in err


def test_actionable_errors(tmp_path):
    kb = _checkout(tmp_path)
    level1 = str(kb / "level1")
    with pytest.raises(BatchError, match=r"needs --candidates DIR.*DIR/5_Scale/cpp_mine\.py.*--pairs"):
        _pairs(_ns(tasks=level1, backend="cpp"))
    with pytest.raises(BatchError, match="no such folder"):
        _pairs(_ns(tasks=level1, candidates=str(tmp_path / "nope")))
    empty = tmp_path / "empty"
    (empty / "relu").mkdir(parents=True)
    with pytest.raises(BatchError) as err:
        _pairs(_ns(tasks=level1, candidates=str(empty), backend="cpp"))
    msg = str(err.value)
    assert f"{empty}/5_Scale/cpp_*.py" in msg and f"{empty}/level1_5_Scale/cpp_*.py" in msg
    assert "subfolders (relu) are named after no task file" in msg and "<task file stem>/<backend>_<name>.py" in msg
    other = tmp_path / "other"
    _cand(other / "19_ReLU", "cuda_vec.py")
    with pytest.raises(BatchError, match=r"1 file\(s\) of other backends \(cuda.*drop --backend cpp"):
        _pairs(_ns(tasks=level1, candidates=str(other), backend="cpp"))
    with pytest.raises(BatchError, match="either --pairs FILE or --tasks"):
        _pairs(_ns(tasks=level1, pairs="p.json"))
    with pytest.raises(BatchError, match="batch needs --pairs FILE"):
        _pairs(_ns())


def test_pairs_file_validation(tmp_path):
    kb = _checkout(tmp_path)
    cand = _cand(tmp_path / "c", "cpp_a.py")
    p = tmp_path / "pairs.json"
    p.write_text(json.dumps([{"task": str(kb / "level1" / "19_ReLU.py"), "candidate": "c/cpp_a.py"}]))
    # a relative path is taken from the pairs file's folder when it is not one from the current folder
    assert _pairs(_ns(pairs=str(p))) == [(str(kb / "level1" / "19_ReLU.py"), str(cand))]
    p.write_text(json.dumps([{"task": str(kb / "level1" / "19_ReLU.py"), "cand": str(cand)}]))
    with pytest.raises(BatchError, match=r"entry 0 has no 'candidate' field \(it has \['cand', 'task'\]\)"):
        _pairs(_ns(pairs=str(p)))
    p.write_text(json.dumps([{"task": str(kb / "level1" / "77_Gone.py"), "candidate": str(cand)}]))
    with pytest.raises(BatchError, match=r"1 path\(s\) are not files: entry 0 task .*77_Gone\.py"):
        _pairs(_ns(pairs=str(p)))
    p.write_text(json.dumps({"task": "x"}))
    with pytest.raises(BatchError, match="expected a JSON list"):
        _pairs(_ns(pairs=str(p)))
    p.write_text("[{")
    with pytest.raises(BatchError, match="not JSON"):
        _pairs(_ns(pairs=str(p)))
    with pytest.raises(BatchError, match="no such file"):
        _pairs(_ns(pairs=str(tmp_path / "missing.json")))


def test_cli_exit_2_with_the_message(tmp_path):
    kb = _checkout(tmp_path)
    out = subprocess.run([sys.executable, "-m", "htam_agent.evaluation", "batch", "--tasks", str(kb / "level1"),
                          "--backend", "cpp"], capture_output=True, text=True)
    assert out.returncode == 2
    assert "error: --tasks" in out.stderr and "needs --candidates DIR" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.slow
def test_batch_on_kernelbench_levels_cpp_uses_the_derived_small_size(tmp_path, build_root, monkeypatch, capsys):
    """A real batch on the cpp backend over a checkout's levels 1 and 3: the 6.4 GB KernelBench-sized ReLU and
    the whole model of level 3 are evaluated at their derived small sizes and accepted; each verdict line names
    the level and the problem."""
    _checkout(tmp_path)
    cands = tmp_path / "cands"
    _cand(cands / "level1_19_ReLU", "cpp_omp.py")
    _cand(cands / "level3" / "1_TinyMLP", "cpp_relu_between_linears.py", CPP_MLP)
    monkeypatch.setenv("HTAM_BUILD_DIR", build_root)
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "verdicts.jsonl"
    rc = main(["batch", "--tasks", str(tmp_path), "--levels", "1,3", "--candidates", str(cands), "--backend", "cpp",
               "--baselines", "eager", "--no-store", "--trials", "2", "--jobs", "1", "--out", str(out)])
    printed = capsys.readouterr()
    assert rc == 0, printed.out[-3000:] + printed.err[-3000:]
    assert "1 of 3 task(s) have no candidate" in printed.err and "5_Scale" in printed.err
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    verdicts = {v["task_id"]: v for v in lines if v.get("candidate_path")}
    assert set(verdicts) == {"level1/19_ReLU", "level3/1_TinyMLP"}
    for task_id, v in verdicts.items():
        assert v["status"] == "accepted", (task_id, v.get("reason"))
        assert v["size"] == "small", task_id
        assert f"{task_id} accepted" in printed.out
    assert verdicts["level1/19_ReLU"]["candidate_path"].endswith("level1_19_ReLU/cpp_omp.py")
    assert all(v["timing"]["eager"].get("paired") for v in verdicts.values())  # eager timed beside each (CPU)
    assert os.path.getsize(out) > 0
