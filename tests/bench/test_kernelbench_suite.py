"""`htam bench` on a KernelBench checkout as it is: levels, problem names, files that cannot load.

Every task file here is written by the test in KernelBench's format (size globals read by `get_inputs`,
`torch.rand` inputs, `super(Model, self)`, no SMALL_SIZES / ALT_SIZES); no KernelBench file is used.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_helpers import logging_run_fn
from support.kernelbench_files import HEAD, RELU, TINY_MLP
from typer.testing import CliRunner

from htam_agent.bench import driver
from htam_agent.bench.comparison_report import write_report
from htam_agent.bench.driver import BenchConfig, TaskCheck, run_bench
from htam_agent.bench.records import RecordStore
from htam_agent.bench.suite import resolve_suite
from htam_agent.cli.bench import app
from htam_agent.context import RunContext

GEMM_CHAIN = HEAD + '''class Model(nn.Module):
    """Gemm, multiply by a scalar, LeakyReLU."""
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(Model, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def forward(self, x):
        x = self.gemm(x)
        x = x * self.multiplier
        return self.leaky_relu(x)

batch_size = 1024
in_features = 8192
out_features = 8192
multiplier = 2.0
negative_slope = 0.1

def get_inputs():
    return [torch.rand(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features, multiplier, negative_slope]
'''

NO_INPUTS = HEAD + '''class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)

batch_size = 16

def get_init_inputs():
    return []
'''

BAD_INIT = HEAD + '''class Model(nn.Module):
    def __init__(self, dim, eps):
        super(Model, self).__init__()
        self.norm = nn.LayerNorm(dim, eps=eps)

    def forward(self, x):
        return self.norm(x)

batch_size = 16
dim = 64

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return [dim]
'''


def write_checkout(root: Path, broken: bool = True) -> Path:
    """root/KernelBench/level1..3, as a KernelBench clone lays them out."""
    kb = root / "KernelBench"
    files = {"level1/19_ReLU.py": RELU, "level2/12_Gemm_Multiply_LeakyReLU.py": GEMM_CHAIN,
             "level3/1_TinyMLP.py": TINY_MLP}
    if broken:
        files.update({"level1/47_Sum_reduction_over_a_dimension.py": NO_INPUTS,
                      "level1/40_LayerNorm.py": BAD_INIT, "level2/3_Syntax.py": "def get_inputs(:\n"})
    for rel, text in files.items():
        (kb / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb / rel).write_text(text)
    (kb / "level3" / "__init__.py").write_text("")  # a package marker is not a task
    return kb


def test_checkout_root_or_its_kernelbench_folder_with_levels(tmp_path):
    kb = write_checkout(tmp_path)
    for suite in (str(tmp_path), str(kb)):
        tasks = resolve_suite(suite, levels="1,2,3")
        assert [t.id for t in tasks] == ["level1/19_ReLU", "level1/40_LayerNorm",
                                         "level1/47_Sum_reduction_over_a_dimension",
                                         "level2/3_Syntax", "level2/12_Gemm_Multiply_LeakyReLU",
                                         "level3/1_TinyMLP"]
        assert {t.id: t.level for t in tasks}["level3/1_TinyMLP"] == "level3"
    assert [t.id for t in resolve_suite(str(tmp_path), levels="3")] == ["level3/1_TinyMLP"]


def _bench(tmp_path: Path, suite: str, levels: str | None, backend: str = "cuda") -> tuple[BenchConfig, Path]:
    cfg = BenchConfig(suite=suite, bench_dir=str(tmp_path / "b"), methods=["one-shot"], budget=1,
                      base=RunContext(backend=backend), levels=levels)
    return cfg, tmp_path / "calls.log"


def test_unloadable_tasks_are_recorded_with_their_reason_and_not_run(tmp_path):
    kb = write_checkout(tmp_path)
    cfg, log = _bench(tmp_path, str(tmp_path), "1,2,3")
    out = run_bench(cfg, logging_run_fn(str(log)), progress=False)
    recs = {r["task"]: r for r in out.records}
    assert len(recs) == 6 and out.unloadable == 3 and out.errors == 0
    bad = {t: r["error"] for t, r in recs.items() if r["status"] == "unloadable"}
    assert set(bad) == {"level1/40_LayerNorm", "level1/47_Sum_reduction_over_a_dimension", "level2/3_Syntax"}
    assert "47_Sum_reduction_over_a_dimension.py: no `get_inputs()` function" in bad[
        "level1/47_Sum_reduction_over_a_dimension"]
    assert "40_LayerNorm.py: Model(*get_init_inputs()) raised TypeError" in bad["level1/40_LayerNorm"]
    assert "3_Syntax.py: syntax error at line 1" in bad["level2/3_Syntax"]
    for t, r in recs.items():  # level and problem reported per task
        assert r["level"] == t.split("/")[0] and r["problem"] == t.split("/")[1]
        assert r["task_path"].endswith(f"/KernelBench/{t}.py")
        assert r["correct"] is (r["status"] == "done")
    started = [line.split()[1] for line in log.read_text().splitlines() if line.startswith("start")]
    assert sorted(started) == sorted(recs[t]["run_id"] for t in recs if t not in bad)  # never run

    # the report lists them with the reason; they count as tasks that are not fast
    paths = write_report(out.records, tmp_path / "report")
    md = paths["md"].read_text()
    assert "## Tasks that could not load, and notes" in md
    assert "| level2/3_Syntax | could not load |" in md
    assert "| level1/40_LayerNorm | could not load |" in md
    summary = json.loads(paths["summary"].read_text())["one-shot"]["overall"]["all"]
    assert summary["tasks"] == 6 and summary["unloadable"] == 3 and summary["errors"] == 0

    # a rerun checks them again (the file may have been fixed) and runs only what now loads
    (kb / "level1" / "40_LayerNorm.py").write_text(BAD_INIT.replace("return [dim]", "return [dim, 1e-5]"))
    log.write_text("")
    again = run_bench(cfg, logging_run_fn(str(log)), progress=False)
    assert again.skipped == 3 and again.ran == 3 and again.unloadable == 2
    assert [line.split()[1] for line in log.read_text().splitlines() if line.startswith("start")] == [
        "level1_40_LayerNorm--one-shot-s0-b1"]
    assert RecordStore(cfg.bench_dir).latest()[out.units[1].key]["status"] == "done"


def test_cli_on_a_checkout_reports_unloadable_tasks_and_exits_0(tmp_path, monkeypatch):
    write_checkout(tmp_path)
    monkeypatch.setattr(driver, "agent_run_fn", logging_run_fn(str(tmp_path / "calls.log")))
    res = CliRunner().invoke(app, [str(tmp_path), "--levels", "1,3", "--methods", "one-shot", "--budget", "1",
                                   "--backend", "cuda", "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "ran 4, skipped 0 finished, 0 harness error(s), 2 run(s) of task files that could not load" in text
    assert "2 task(s) could not load" in text
    assert "level1/47_Sum_reduction_over_a_dimension: " in text and "no `get_inputs()` function" in text
    assert "level2" not in text.split("could not load")[-1]  # --levels 1,3: level 2 was never looked at


def test_cli_check_loads_every_task_and_runs_nothing(tmp_path, monkeypatch):
    write_checkout(tmp_path)
    monkeypatch.setattr(driver, "agent_run_fn", lambda *a, **k: pytest.fail("--check must run nothing"))
    res = CliRunner().invoke(app, [str(tmp_path / "KernelBench"), "--levels", "1-3", "--check", "--backend", "cuda",
                                   "--out", str(tmp_path / "b")])
    assert res.exit_code == 1, res.output  # some cannot load
    lines = dict(line.split("  ", 1) for line in res.output.splitlines() if line.startswith("level"))
    assert lines["level1/19_ReLU"] == "[elementwise]  ok" and lines["level3/1_TinyMLP"] == "[model]  ok"
    assert lines["level2/12_Gemm_Multiply_LeakyReLU"] == "[fused]  ok"
    assert lines["level2/3_Syntax"].startswith("[fused]  could not load: ") and "syntax error" in lines["level2/3_Syntax"]
    assert "6 task(s): 3 load, 3 cannot (backend cuda" in res.output
    assert not (tmp_path / "b" / "results.jsonl").exists()
    ok = CliRunner().invoke(app, [str(tmp_path), "--levels", "3", "--check", "--backend", "cuda"])
    assert ok.exit_code == 0 and "1 task(s): 1 load, 0 cannot" in ok.output


def test_task_check_on_cpp_uses_the_derived_small_size(tmp_path, monkeypatch):
    """On cpp a KernelBench file has a derived small size (no note); a file whose small size cannot be derived
    runs at its default size and the record says so."""
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    kb = write_checkout(tmp_path, broken=False)
    (kb / "level1" / "2_Literal.py").write_text(HEAD + '''class Model(nn.Module):
    def forward(self, x):
        return x * 2

def get_inputs():
    return [torch.rand(4096, 393216)]
''')
    check = TaskCheck("cpp", None)
    tasks = {t.id: t for t in resolve_suite(str(tmp_path), levels="1,2,3")}
    assert check(tasks["level1/19_ReLU"]) == (None, "")
    assert check(tasks["level3/1_TinyMLP"]) == (None, "")
    problem, note = check(tasks["level1/2_Literal"])
    assert problem is None and note.startswith("no small size (") and "default size" in note
    assert TaskCheck("cpp", "default")(tasks["level1/2_Literal"]) == (None, "")  # a size was asked: no note


@pytest.mark.slow
def test_real_bench_on_a_checkout_cpp_levels_1_and_3(tmp_path, monkeypatch, build_root):
    """`htam bench ROOT --levels 1,3 --backend cpp` with the real agent and evaluator, offline coder: the
    KernelBench-sized ReLU (6.4 GB at its default size) is optimized at its derived small size; the whole model
    of level 3 loads and its run ends cleanly (the offline coder does not write whole models: 'unsupported')."""
    write_checkout(tmp_path, broken=False)
    for var, sub in (("HTAM_BUILD_DIR", None), ("HTAM_VERDICT_DIR", "verdicts"), ("HTAM_CACHE_DIR", "cache")):
        monkeypatch.setenv(var, build_root if sub is None else str(tmp_path / sub))
    for var in ("HTAM_MODEL", "HTAM_BASE_URL", "OPENAI_BASE_URL", "HTAM_CODER", "HTAM_BACKEND", "HTAM_STEPS"):
        monkeypatch.delenv(var, raising=False)
    res = CliRunner().invoke(app, [str(tmp_path), "--levels", "1,3", "--methods", "one-shot", "--budget", "1",
                                   "--backend", "cpp", "--baselines", "eager", "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    recs = {r["task"]: r for r in RecordStore(tmp_path / "b").latest().values()}
    assert set(recs) == {"level1/19_ReLU", "level3/1_TinyMLP"}
    relu, mlp = recs["level1/19_ReLU"], recs["level3/1_TinyMLP"]
    assert relu["status"] == "done" and relu["level"] == "level1" and relu["evaluations"] == 1
    verdict = json.loads(next(Path(relu["artifact_dir"]).glob("step_00/cand_0_r0/verdict.json")).read_text())
    assert verdict["size"] == "small" and verdict["status"] == "accepted", verdict["reason"]
    assert relu["correct"] is True and relu["speedup_vs_eager"] > 0
    assert mlp["status"] == "done" and mlp["level"] == "level3" and mlp["category"] == "model"
    assert mlp["correct"] is False and mlp["stop_reason"] == "unsupported"
    assert (tmp_path / "b" / "report" / "report.md").is_file()
