"""Records: atomic appends, torn lines, resume after kill -9 of a real bench process, incremental methods."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from bench_helpers import logging_run_fn

from htam_agent.bench.driver import BenchConfig, plan, run_bench
from htam_agent.bench.records import KEY_FIELDS, RecordStore, record_key
from htam_agent.context import RunContext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _rec(task, method="htam", status="done", **kw):
    base = dict(suite="s", task=task, method=method, seed=0, budget=2, backend="cpp", coder="exemplar", size="auto")
    return {**base, "status": status, **kw}


def test_append_latest_wins_and_torn_lines_are_skipped(tmp_path):
    store = RecordStore(tmp_path)
    store.append(_rec("a", status="error", error="boom"))
    store.append(_rec("b"))
    assert store.done_keys() == {record_key(_rec("b"))}
    store.append(_rec("a", correct=True))  # the retry
    assert len(store.latest()) == 2 and store.latest()[record_key(_rec("a"))]["correct"] is True
    with open(store.path, "ab") as f:      # a writer killed mid-line
        f.write(b'{"suite": "s", "task": "c", "meth')
    store.append(_rec("d"))                 # starts on a fresh line, never glued to the fragment
    tasks = [r["task"] for r in store]
    assert tasks == ["a", "b", "a", "d"]
    lines = store.path.read_bytes().split(b"\n")
    assert b'"task": "d"' in lines[-2] and lines[-2].startswith(b"{")
    try:
        store.append({"task": "x"})
    except ValueError as exc:
        assert all(k in str(exc) for k in ("suite", "method"))
    else:
        raise AssertionError("a record without its key fields was accepted")
    assert set(KEY_FIELDS) >= {"suite", "task", "method", "seed", "budget", "backend", "coder"}


DRIVER = """
import sys
from bench_helpers import logging_run_fn
from htam_agent.bench.driver import BenchConfig, run_bench
from htam_agent.context import RunContext
cfg = BenchConfig(suite="bundled", bench_dir=sys.argv[1], methods=["one-shot", "refine"], budget=2,
                  base=RunContext(backend="cpp"), task_filter="norm_*,reduction_*", workers=1)
run_bench(cfg, logging_run_fn(sys.argv[2], sleep_s=float(sys.argv[3])), progress=False)
"""


def _starts(log: Path) -> Counter:
    return Counter(line.split()[1] for line in log.read_text().splitlines() if line.startswith("start"))


@pytest.mark.slow  # fast lane: ~40 s, a bench killed and resumed
def test_kill_9_mid_bench_then_resume_loses_and_repeats_nothing(tmp_path):
    bench, log = tmp_path / "bench", tmp_path / "calls.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)])}
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(bench), str(log), "0.3"], env=env)
    results = bench / "results.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline:
        if results.exists() and len(results.read_text().splitlines()) >= 4:
            break
        assert proc.poll() is None, "the bench finished or died before it could be killed"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    store = RecordStore(bench)
    first = {r["run_id"] for r in store}
    n_total = 2 * 8  # 8 norm_/reduction_ tasks x 2 methods
    assert 4 <= len(first) < n_total
    first_starts = _starts(log)

    # resume in another real process, to completion
    subprocess.run([sys.executable, "-c", DRIVER, str(bench), str(log), "0"], env=env, check=True, timeout=300)
    recs = list(store)
    run_ids = [r["run_id"] for r in recs]
    assert len(run_ids) == len(set(run_ids)) == n_total, "a finished task was recorded twice or one is missing"
    assert all(r["status"] == "done" for r in recs)
    starts = _starts(log)
    assert set(starts) == set(run_ids)
    repeated = {k for k, n in starts.items() if n > 1}
    assert not repeated & first, "a task recorded before the kill ran again"
    assert repeated <= set(first_starts) - first and len(repeated) <= 1  # at most the one in flight


def test_adding_a_method_reuses_finished_results_and_errors_are_retried(tmp_path):
    log = tmp_path / "calls.log"
    base = RunContext(backend="cpp")
    cfg = BenchConfig(suite="bundled", bench_dir=str(tmp_path / "b"), methods=["one-shot"], budget=3,
                      base=base, task_filter="norm_*", workers=1)
    out = run_bench(cfg, logging_run_fn(str(log), fail_tasks=("norm_softmax",)), progress=False)
    assert (out.ran, out.skipped, out.errors) == (4, 0, 1)
    bad = [r for r in out.records if r["status"] == "error"]
    assert len(bad) == 1 and "endpoint down" in bad[0]["error"] and bad[0]["task"] == "norm_softmax"

    cfg2 = BenchConfig(suite="bundled", bench_dir=str(tmp_path / "b"), methods=["one-shot", "best-of-n"],
                       budget=3, base=base, task_filter="norm_*", workers=2)
    out2 = run_bench(cfg2, logging_run_fn(str(log)), progress=False)
    assert (out2.ran, out2.skipped, out2.errors) == (5, 3, 0)  # 4 best-of-n + the errored one-shot retried
    assert len(out2.records) == 8 and all(r["status"] == "done" for r in out2.records)
    starts = _starts(log)
    assert starts["norm_softmax--one-shot-s0-b3"] == 2
    assert all(n == 1 for k, n in starts.items() if k != "norm_softmax--one-shot-s0-b3")
    bon = [r for r in out2.records if r["method"] == "best-of-n"]
    assert all(r["evaluations"] == 3 and r["max_evaluations"] == 3 for r in bon)
    assert all(r["context"]["memory_dir"].endswith("memory/best-of-n-s0") for r in bon)
    # a different budget is a different experiment: nothing is reused
    assert len(plan(BenchConfig(suite="bundled", bench_dir=str(tmp_path / "b"), methods=["one-shot"], budget=4,
                                base=base, task_filter="norm_*"))) == 4
    assert not {u.key for u in plan(BenchConfig(suite="bundled", bench_dir=str(tmp_path / "b"), methods=["one-shot"],
                                                budget=4, base=base, task_filter="norm_*"))} & RecordStore(
        tmp_path / "b").done_keys()
    manifest = json.loads((tmp_path / "b" / "bench.json").read_text())
    assert manifest["methods"] == ["one-shot", "best-of-n"] and manifest["units"] == 8


def test_lanes_have_their_own_memory_and_artifacts(tmp_path):
    cfg = BenchConfig(suite="bundled", bench_dir=str(tmp_path), methods=["htam", "flat-memory"], budget=2,
                      seeds=(0, 1), base=RunContext(backend="cpp"), limit=2)
    units = plan(cfg)
    assert len(units) == 2 * 2 * 2
    assert [u.lane for u in units[:4]] == ["htam-s0", "htam-s1", "flat-memory-s0", "flat-memory-s1"]
    assert len({u.ctx.memory_dir for u in units}) == 4 and len({u.key for u in units}) == 8
    assert all(u.ctx.seed == u.seed and u.ctx.runs_dir.endswith(u.lane) for u in units)


def test_parallel_workers_one_per_gpu(tmp_path):
    """Two workers on a 'cuda' bench: each run gets its worker's device index; every record lands once."""
    import threading

    seen: list[tuple[int, str]] = []
    lock = threading.Lock()
    inner = logging_run_fn(str(tmp_path / "log"), sleep_s=0.05)

    def run(task_path, ctx, *, run_id=None):
        with lock:
            seen.append((ctx.device_index, threading.current_thread().name))
        return inner(task_path, ctx, run_id=run_id)

    cfg = BenchConfig(suite="bundled", bench_dir=str(tmp_path / "b"), methods=["htam", "refine", "best-of-n"],
                      budget=2, base=RunContext(backend="cuda"), limit=6, workers=2)
    out = run_bench(cfg, run, progress=False)
    assert out.ran == 18 and len(out.records) == 18 and len(list(RecordStore(tmp_path / "b"))) == 18
    assert {d for d, _ in seen} == {0, 1}
    assert all(int(name.rsplit("-", 1)[1]) == d for d, name in seen)  # a worker keeps its GPU
