"""The bench driving the real agent (LangGraph graph, evaluator, HTAM memory, artifacts) on the cpp backend."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bench_helpers import agent_with_bundled_coder
from typer.testing import CliRunner

from htam_agent.bench.driver import BenchConfig, run_bench
from htam_agent.cli.bench import app
from htam_agent.context import RunContext
from htam_agent.run import resources
from htam_agent.run.result import best_verdict_in

pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, build_root: str) -> Path:
    monkeypatch.setenv("HTAM_BUILD_DIR", build_root)
    monkeypatch.setenv("HTAM_VERDICT_DIR", str(tmp_path / "verdicts"))
    monkeypatch.setenv("HTAM_MEMORY_DIR", str(tmp_path / "user-memory"))  # must stay untouched
    for var in ("HTAM_MODEL", "HTAM_BASE_URL", "OPENAI_BASE_URL", "HTAM_CODER", "HTAM_BACKEND", "HTAM_STEPS"):
        monkeypatch.delenv(var, raising=False)
    resources.clear_cache()
    yield tmp_path
    resources.clear_cache()


def _events(memory_dir: str) -> list:
    from htam_agent.memory.htam import HTAMemory

    with HTAMemory.open(memory_dir) as mem:
        return [e for _, e in mem.transitions.events()]


def _assert_speedup_is_measured(rec: dict) -> None:
    """The record's speedup is its best step's verdict's: eager median over the candidate's, as timed."""
    result = json.loads((Path(rec["artifact_dir"]) / "result.json").read_text())
    assert result["best_speedup_vs_eager"] == rec["speedup_vs_eager"], (result, rec)
    verdict = best_verdict_in(rec["artifact_dir"], result["best_step"], rec["speedup_vs_eager"])
    assert verdict is not None and verdict["speedup_vs_eager"] == rec["speedup_vs_eager"], verdict
    eager, cand = verdict["timing"]["eager"]["median_ms"], verdict["timing"]["candidate"]["median_ms"]
    assert eager > 0 and cand > 0
    # as test_faults: the verdict keeps 4 decimals of the ratio, and the medians it keeps are rounded too
    assert rec["speedup_vs_eager"] == pytest.approx(eager / cand, rel=1e-3, abs=5e-5), (eager, cand)


def test_bench_runs_the_agent_with_one_memory_per_lane(env: Path) -> None:
    base = RunContext.from_env(backend="cpp", size="small", baselines=("eager",))
    cfg = BenchConfig(suite="bundled", bench_dir=str(env / "bench"), methods=["htam", "refine"], budget=2,
                      base=base, task_filter="norm_softmax,reduction_row_sum")
    out = run_bench(cfg, agent_with_bundled_coder, progress=False)
    assert (out.ran, out.errors) == (4, 0), [r["error"] for r in out.records]
    for rec in out.records:
        assert rec["correct"], rec
        _assert_speedup_is_measured(rec)
        assert 1 <= rec["evaluations"] <= rec["max_evaluations"] == 2
        assert rec["result"]["run_id"] == rec["run_id"]
        assert "class ModelNew" in Path(rec["best_code_path"]).read_text()
        assert Path(rec["artifact_dir"]).parent == env / "bench" / "runs" / rec["lane"]
        assert json.loads((Path(rec["artifact_dir"]) / "result.json").read_text())["correct"]
    # the htam lane learned from both tasks, in its own folder; refine (memory none) learned nothing
    htam_events = _events(str(env / "bench" / "memory" / "htam-s0"))
    assert {e.run_id for e in htam_events} == {r["run_id"] for r in out.records if r["method"] == "htam"}
    assert not (env / "bench" / "memory" / "refine-s0" / "transitions.sqlite3").exists() or not _events(
        str(env / "bench" / "memory" / "refine-s0"))
    assert not (env / "user-memory").exists()


def test_ray_workers_share_what_they_learn_through_a_chroma_server(env: Path) -> None:
    """The agent on a local Ray cluster (2 CPUs), memory on a real `chroma run` server: the driver, reading the
    server through a replica of its own, sees every step both workers recorded; nothing went to the lane's
    folder under the bench (the workers kept their replicas host-local)."""
    import bench_helpers
    import ray
    from support.chroma_server import ChromaServerProcess

    from htam_agent.bench.ray_driver import host_replica_dir, run_bench_ray
    from htam_agent.memory.config import MemoryConfig
    from htam_agent.memory.htam import HTAMemory

    server = ChromaServerProcess(env / "chroma").start()
    ns = None
    try:
        base = RunContext.from_env(backend="cpp", size="small", baselines=("eager",), chroma_url=server.url)
        cfg = BenchConfig(suite="bundled", bench_dir=str(env / "bench"), methods=["htam"], budget=2, base=base,
                          task_filter="norm_softmax,reduction_row_sum")
        ray.cloudpickle.register_pickle_by_value(bench_helpers)  # the workers cannot import the test folder
        try:
            out = run_bench_ray(cfg, "local", agent_with_bundled_coder, progress=False, num_cpus=2,
                                include_dashboard=False)
        finally:
            ray.shutdown()
        assert (out.ran, out.errors) == (2, 0), [r["error"] for r in out.records]
        assert all(r["executor"] == "ray" and r["correct"] for r in out.records)
        ns = out.units[0].ctx.memory_namespace
        assert ns and all(u.ctx.memory_namespace == ns for u in out.units)
        with HTAMemory(MemoryConfig(env / "driver", chroma_url=server.url, collection_prefix=ns)) as mem:
            events = [e for _, e in mem.transitions.events()]
            assert mem.transitions.pending() == 0
        runs = {r["run_id"]: r for r in out.records}
        assert {e.run_id for e in events} == set(runs)
        for run_id, rec in runs.items():  # one event per step the run took, none lost, none twice
            steps = [e for e in events if e.run_id == run_id]
            assert len(steps) == len({e.uid for e in steps}) == len(rec["result"]["steps"]) >= 1
        assert not list((env / "bench" / "memory").rglob("*.sqlite3"))
        assert list(host_replica_dir(ns).rglob("*.sqlite3"))
    finally:
        server.stop()
        # the workers' replicas live in this host's temporary folder, named for the bench folder: a later
        # run whose bench folder has the same path must not find this run's replica there
        if ns:
            shutil.rmtree(host_replica_dir(ns), ignore_errors=True)


def test_cli_bench_with_the_offline_exemplar_coder(env: Path) -> None:
    """The CLI's exemplar path, one evaluation per lane: the htam lane's second step was a third build and timed
    verdict (99 s for the test in the last full run), and later steps are the other tests' (the bench's two
    steps per lane above, test_loop_cpp; the exemplar coder's second step: chat/test_conversation)."""
    res = CliRunner().invoke(app, ["bundled", "--methods", "htam,one-shot", "--budget", "1", "--backend", "cpp",
                                   "--size", "small", "--baselines", "eager", "--coder", "exemplar",
                                   "--filter", "elementwise_leaky_relu", "--out", str(env / "b")])
    assert res.exit_code == 0, res.output
    recs = [json.loads(line) for line in (env / "b" / "results.jsonl").read_text().splitlines()]
    assert {r["method"] for r in recs} == {"htam", "one-shot"} and all(r["status"] == "done" for r in recs)
    assert all(r["coder"] == "exemplar" and r["result"]["uses_llm"] is False for r in recs)
    assert next(r for r in recs if r["method"] == "one-shot")["evaluations"] == 1
    assert any(r["correct"] for r in recs)
    assert (env / "b" / "report" / "report.html").is_file()
