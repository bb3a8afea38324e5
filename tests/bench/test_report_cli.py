"""The report (markdown, self-contained HTML, plots, JSON) and `htam bench` on good and bad input."""

from __future__ import annotations

import base64
import json
import re

import pytest
import typer
from bench_helpers import logging_run_fn
from typer.testing import CliRunner

from htam_agent.bench import driver
from htam_agent.bench import metrics as M
from htam_agent.bench.comparison_report import write_report
from htam_agent.bench.driver import BenchConfig, run_bench
from htam_agent.cli.bench import app, bench_command
from htam_agent.context import RunContext

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def records(tmp_path):
    cfg = BenchConfig(suite="bundled", bench_dir=str(tmp_path / "b"), methods=["htam", "one-shot", "best-of-n"],
                      budget=4, base=RunContext(backend="cpp"), task_filter="conv_*,norm_*,matmul_*")
    return run_bench(cfg, logging_run_fn(str(tmp_path / "log")), progress=False).records


def test_report_has_tables_plots_and_json(records, tmp_path):
    paths = write_report(records, tmp_path / "report", title="t", notes=["a note"])
    md = paths["md"].read_text()
    for needle in ("## Overall: vs eager", "## Overall: vs torch.compile", "## Per level", "## Per operator class",
                   "fast_1.5", "geomean vs eager", "| htam |", "| best-of-n |", "a note",
                   "(not budgeted)", "![Speedup distribution per method](speedup_distribution.png)",
                   "![fast_p curves](fast_p.png)", "![Per operator class](categories.png)"):
        assert needle in md, needle
    for name in ("speedup_distribution.png", "fast_p.png", "categories.png"):
        assert paths[name].read_bytes().startswith(PNG) and paths[name].stat().st_size > 5000
    # the table shows the metrics' numbers: the htam row's correctness
    htam = [r for r in records if r["method"] == "htam"]
    rate = f"{100 * M.correctness_rate(htam):.1f}%"
    row = next(line for line in md.splitlines() if line.startswith("| htam |"))
    assert rate in row and "conv_" not in row
    assert "| convolution | htam | 2 | 0.0% |" in md  # conv tasks are incorrect in the helper
    html = paths["html"].read_text()
    imgs = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", html)
    assert len(imgs) == 3 and all(base64.b64decode(i).startswith(PNG) for i in imgs)
    assert html.count("<table>") == 6 and "<td>htam</td>" in html and "src='fast_p.png'" not in html
    data = json.loads(paths["json"].read_text())
    assert len(data) == len(records) == 3 * 9
    assert all("artifact_dir" in r and r["status"] == "done" for r in data)
    summary = json.loads(paths["summary"].read_text())
    assert summary["htam"]["overall"]["all"]["tasks"] == 9 and "convolution" in summary["htam"]["category"]


def test_report_of_nothing_is_an_error(tmp_path):
    with pytest.raises(ValueError):
        write_report([], tmp_path)


cli = CliRunner()


@pytest.mark.parametrize("args,message", [
    (["bundled", "--methods", "htam,warp-drive"], "unknown method(s) 'warp-drive'"),
    (["bundled", "--levels", "1"], "no levels"),
    (["bundled", "--filter", "zzz"], "matches no task"),
    (["bundled", "--budget", "0"], "--budget must be at least 1"),
    (["bundled", "--seeds", "a,b"], "--seeds"),
    (["bundled", "--backend", "fpga"], "backend"),
    (["/no/such/suite"], "no such folder"),
])
def test_cli_rejects_bad_input(args, message, tmp_path):
    res = cli.invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split()), res.output
    assert not (tmp_path / "b" / "results.jsonl").exists()


def test_cli_empty_suite_and_bad_levels_of_a_checkout(tmp_path):
    (tmp_path / "empty").mkdir()
    res = cli.invoke(app, [str(tmp_path / "empty"), "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "no .py task files" in res.output
    (tmp_path / "kb" / "level1").mkdir(parents=True)
    (tmp_path / "kb" / "level1" / "1_ReLU.py").write_text("x = 1\n")
    for levels, msg in (("2", "no level 2"), ("x", "bad level"), ("1-", "bad level range")):
        res = cli.invoke(app, [str(tmp_path / "kb"), "--levels", levels, "--out", str(tmp_path / "b")])
        assert res.exit_code == 2 and msg in res.output, res.output
    res = cli.invoke(app, ["bundled", "--report-only", "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "no records" in res.output


def test_cli_plan_shows_the_equal_budget(tmp_path):
    res = cli.invoke(app, ["bundled", "--plan", "--methods", "all", "--budget", "4", "--backend", "cpp",
                           "--filter", "norm_*", "--seeds", "0,1", "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert "4 tasks x 8 methods x 2 seeds = 64 runs (0 already done)" in res.output
    caps = re.findall(r"^\s+(\S+)\s.*at most (\d+) evaluations", res.output, re.M)
    assert dict(caps) == {"htam": "4", "one-shot": "1", "refine": "4", "flat-memory": "4", "best-of-n": "4",
                          "random-direction": "4", "htam-no-strategies": "4", "htam-no-transitions": "4"}
    assert not (tmp_path / "b" / "results.jsonl").exists()


def test_cli_runs_resumes_and_reports_when_mounted_as_htam_bench(tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setattr(driver, "agent_run_fn", logging_run_fn(str(log)))
    root = typer.Typer()

    @root.command()
    def other() -> None:  # a second command, as in the real `htam` app
        pass

    root.command("bench")(bench_command)
    args = ["bench", "bundled", "--methods", "refine,one-shot", "--budget", "2", "--backend", "cpp",
            "--filter", "pool_*", "--out", str(tmp_path / "b")]
    res = cli.invoke(root, args)
    assert res.exit_code == 0, res.output
    assert "ran 4, skipped 0" in res.output and "report.html" in res.output
    assert (tmp_path / "b" / "report" / "report.md").is_file()
    res = cli.invoke(root, [*args[:3], "refine,one-shot,flat-memory", *args[4:]])
    assert res.exit_code == 0 and "ran 2, skipped 4" in res.output, res.output
    assert len(log.read_text().splitlines()) == 2 * 6
    md = (tmp_path / "b" / "report" / "report.md").read_text()
    assert "| flat-memory |" in md and "one-shot uses 1 evaluation" in md
    res = cli.invoke(root, [*args, "--report-only"])
    assert res.exit_code == 0 and "ran" not in res.output
