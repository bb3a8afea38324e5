"""benchmarks/verdict_table.py, the verdict table's job, on a real task through the real evaluator: records
written as each variant is done, with their code's hash and two timed rounds; a second run resumes and
evaluates nothing; a variant whose code the coder no longer writes is evaluated again.

What it checks is the job's bookkeeping (records, rounds, resume, the code's hash), not a speedup over
torch.compile: it runs with --no-compile-baseline (the first round timed against eager only, as the retimed
rounds always are), which spares the suite its only cold torch.compile of a reference (the test 176 -> 120 s
wall, 109 -> 79 s CPU on the loaded 2-core VM), and checks that the records then carry no speedup_compile."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from htam_agent.bench.table import load_table

ROOT = Path(__file__).resolve().parents[2]

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * 2.0


def get_inputs():
    return [torch.rand(64, 256)]


def get_init_inputs():
    return []
'''


def _job():
    spec = importlib.util.spec_from_file_location("verdict_table", ROOT / "benchmarks" / "verdict_table.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_the_job_writes_resumes_and_notices_a_changed_coder(tmp_path: Path, build_root: str,
                                                           capsys: pytest.CaptureFixture[str]):
    kb = tmp_path / "KernelBench"
    (kb / "level1").mkdir(parents=True)
    (kb / "level1" / "1_relu_scale.py").write_text(TASK)
    out = tmp_path / "table.jsonl"
    argv = [str(kb), "--backend", "cpp", "--out", str(out), "--levels", "1", "--rounds", "2", "--max-rounds", "2",
            "--max-variants", "2", "--build-root", build_root, "--work", str(tmp_path / "work"), "--no-compile-baseline"]
    job = _job()
    assert job.main(argv) == 0
    table = load_table(out)
    recs = table.variants("level1/1_relu_scale")
    assert len(recs) == 2
    for rec in recs:
        assert rec.status == "accepted", rec.reason
        assert rec.n_timings == 2 and rec.ratio_lo <= rec.speedup_eager <= rec.ratio_hi
        assert rec.code_sha and rec.op_class and rec.family == "elementwise"
        assert rec.speedup_compile is None  # eager only, as asked
    prov = json.loads(out.with_name("table.provenance.json").read_text())
    assert len(prov["runs"]) == 1 and prov["runs"][0]["backend"] == "cpp"

    capsys.readouterr()
    assert job.main(argv) == 0  # resumed: nothing left to do
    assert "0 variants evaluated" in capsys.readouterr().out

    # a record whose code the coder no longer writes (its hash differs) is evaluated again, and wins
    lines = out.read_text().splitlines()
    stale = json.loads(lines[0])
    stale["code_sha"] = "0" * 16
    out.write_text("\n".join(lines + [json.dumps(stale)]) + "\n")
    capsys.readouterr()
    assert job.main(argv) == 0
    assert "1 variants evaluated" in capsys.readouterr().out
    assert load_table(out).get("level1/1_relu_scale", stale["variant"]).code_sha != "0" * 16

    # --max-problems counts the problems this run measures: a finished one does not use up the allowance
    (kb / "level1" / "2_relu_scale_again.py").write_text(TASK.replace("* 2.0", "* 3.0"))
    capsys.readouterr()
    assert job.main([*argv, "--max-problems", "1", "--max-variants", "1"]) == 0
    assert "1 variants evaluated" in capsys.readouterr().out
    assert len(load_table(out).variants("level1/2_relu_scale_again")) == 1

    # --prune drops a record of a variant the coder no longer writes (here: one renamed by hand) and nothing else
    lines = out.read_text().splitlines()
    renamed = json.loads(lines[0])
    renamed["variant"] = "a-knob-that-is-gone"
    out.write_text("\n".join(lines + [json.dumps(renamed)]) + "\n")
    mine = lambda t: [r for r in t.records if r.problem == "level1/1_relu_scale"]  # noqa: E731
    before = len(mine(load_table(out)))
    capsys.readouterr()
    assert job.main([*argv, "--prune"]) == 0
    assert "pruned 1 record(s)" in capsys.readouterr().out
    after = load_table(out)
    assert len(mine(after)) == before - 1 and after.get("level1/1_relu_scale", "a-knob-that-is-gone") is None
