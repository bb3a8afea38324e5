"""The runner and the Ray path with runs that do real work: the bundled honest cpp candidates through the real
evaluator (worker processes, correctness trials, timing against eager), on a local Ray cluster of 2 CPUs."""

from __future__ import annotations

import json
from pathlib import Path

import bench_helpers
import pytest
from bench_helpers import evaluating_run_fn

from htam_agent.bench.comparison_report import write_report
from htam_agent.bench.driver import BenchConfig, run_bench
from htam_agent.bench.records import RecordStore
from htam_agent.context import RunContext

pytestmark = pytest.mark.slow  # C++ builds (cached in HTAM_TEST_BUILD_DIR after the first run)
TASKS = "norm_softmax,reduction_row_sum"


def _check_real(rec: dict) -> None:
    assert rec["status"] == "done" and rec["correct"] is True, rec.get("error")
    assert rec["speedup_vs_eager"] > 0 and rec["evaluations"] == 1
    verdict = json.loads((Path(rec["artifact_dir"]) / "eval_0.json").read_text())
    assert verdict["status"] == "accepted" and verdict["timing"]["candidate"]["median_ms"] > 0
    assert verdict["speedup_vs_eager"] == rec["speedup_vs_eager"]
    assert Path(rec["best_code_path"]).read_text().count("ModelNew")


def test_local_then_ray_on_the_same_bench_folder(tmp_path):
    import ray

    base = RunContext(backend="cpp")
    bench = tmp_path / "bench"
    local = BenchConfig(suite="bundled", bench_dir=str(bench), methods=["one-shot"], budget=1, base=base,
                        task_filter=TASKS)
    out = run_bench(local, evaluating_run_fn, progress=False)
    assert (out.ran, out.errors) == (2, 0)
    for rec in out.records:
        _check_real(rec)
        assert rec["artifact_dir"].startswith(str(bench / "runs" / "one-shot-s0"))

    # add a method and run it on a local Ray cluster started here (2 CPUs, cpp: one CPU per task)
    from htam_agent.bench.ray_driver import run_bench_ray

    ray.cloudpickle.register_pickle_by_value(bench_helpers)  # the workers cannot import the test folder
    both = BenchConfig(suite="bundled", bench_dir=str(bench), methods=["one-shot", "best-of-n"], budget=1,
                       base=base, task_filter=TASKS)
    try:
        out2 = run_bench_ray(both, "local", evaluating_run_fn, progress=False, num_cpus=2, include_dashboard=False)
        nodes = ray.nodes()
    finally:
        ray.shutdown()
    assert (out2.ran, out2.skipped, out2.errors) == (2, 2, 0)
    assert len(nodes) == 1 and nodes[0]["Resources"].get("CPU") == 2.0
    by_method = {}
    for rec in out2.records:
        by_method.setdefault(rec["method"], []).append(rec)
        _check_real(rec)
    assert [r["task"] for r in by_method["best-of-n"]] == ["norm_softmax", "reduction_row_sum"]
    assert all(r["executor"] == "ray" and r["host"] for r in by_method["best-of-n"])
    assert all("executor" not in r for r in by_method["one-shot"])  # reused, not rerun
    assert len(list(RecordStore(bench))) == 4
    paths = write_report(out2.records, bench / "report")
    md = paths["md"].read_text()
    assert "| best-of-n | 2 | 100.0% |" in md and "| one-shot | 2 | 100.0% |" in md
