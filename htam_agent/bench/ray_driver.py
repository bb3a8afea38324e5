"""`htam bench --ray ADDRESS`: the same plan, each unit a Ray task; the driver writes the records.

Each unit runs as a Ray task that asks for one GPU (cuda, triton backends; Ray then sets CUDA_VISIBLE_DEVICES,
so the task uses device 0 of what it sees) or one CPU (cpp). The task returns the run's result as a plain
dict (RunResult.as_dict(), JSON types only) or the error it raised; the driver turns it into a record and
appends it to BENCH/results.jsonl as soon as it arrives, so resume works exactly as on one host.

Memory across hosts: give every host the same Chroma server (``--chroma-url`` / HTAM_CHROMA_URL, carried in
the RunContext). The lanes' strategies, notes and transition logs then live on the server (memory/shared_log.py),
so concurrent writers on different hosts lose nothing; each worker keeps its replica of a lane's log in a
host-local folder (SQLite on a network file system is no place for it). Without a server each host keeps its own
memory folder (the lane's path under the bench folder), which is only shared if that path is on a shared file
system. Environment variables named HTAM_* (without secrets in their names) are forwarded to the workers; an
LLM key is not: set it on the cluster's nodes (the variable named by RunContext.api_key_env).
"""

from __future__ import annotations

import getpass
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from htam_agent.backend_registry import is_cpu

from .driver import (
    BenchConfig,
    BenchOutcome,
    RunFn,
    TaskCheck,
    Unit,
    _Progress,
    plan,
    result_record,
    unloadable_record,
    write_manifest,
)
from .records import RecordStore

_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION)", re.I)


def _remote_run(task_path: str, ctx: Any, run_id: str, run_fn: RunFn | None) -> dict[str, Any]:
    """Body of the Ray task: one optimization run; never raises (the error travels back as text)."""
    import socket
    import traceback

    t0 = time.time()
    if run_fn is None:
        from .driver import agent_run_fn as run_fn
    if getattr(ctx, "chroma_url", None):
        ctx = ctx.with_(memory_dir=str(host_replica_dir(ctx.memory_namespace or "htam")))
    try:
        result = run_fn(task_path, ctx, run_id=run_id)
        res = result.as_dict() if hasattr(result, "as_dict") else dict(result)
        return {"result": res, "error": "", "wall": time.time() - t0, "host": socket.gethostname()}
    except Exception as exc:  # noqa: BLE001 - recorded by the driver, retried on the next bench run
        return {"result": None, "error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}",
                "wall": time.time() - t0, "host": socket.gethostname()}


def host_replica_dir(namespace: str) -> Path:
    """Where a worker keeps its replicas of a lane's shared log: this host's temporary folder (the server holds
    the log, so losing the folder costs a re-read, never experience)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a container user without a passwd entry
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"htam-replicas-{user}" / namespace


def forwarded_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith("HTAM_") and not _SECRET.search(k)}


def connect(address: str, **init_kwargs: Any) -> None:
    """Join the cluster at ADDRESS ('auto', 'ray://host:10001', 'host:6379', or 'local' to start one here)."""
    import ray

    if ray.is_initialized():
        return
    runtime_env = {"env_vars": forwarded_env()}
    if address == "local":
        ray.init(runtime_env=runtime_env, **init_kwargs)
    else:
        ray.init(address=address, runtime_env=runtime_env, **init_kwargs)


def run_bench_ray(config: BenchConfig, address: str, run_fn: RunFn | None = None, *, progress: bool = True,
                  units: list[Unit] | None = None, max_in_flight: int | None = None,
                  **init_kwargs: Any) -> BenchOutcome:
    """Run every unfinished unit of the plan as a Ray task; records are written here, one per finished task."""
    import ray

    units = units if units is not None else plan(config)
    store = RecordStore(config.bench_dir)
    write_manifest(config, units)
    done = store.done_keys()
    todo = [u for u in units if u.key not in done]
    outcome = BenchOutcome(units=units, skipped=len(units) - len(todo))
    if todo:
        connect(address, **init_kwargs)
        gpu = not is_cpu(config.base.backend)
        resources = {"num_gpus": 1, "num_cpus": 1} if gpu else {"num_cpus": 1}
        remote = ray.remote(max_retries=1, retry_exceptions=False, **resources)(_remote_run)
        limit = max_in_flight or max(1, len(todo))
        pending: dict[Any, Unit] = {}
        queue = list(todo)
        check = TaskCheck(config.base.backend, config.base.size)
        notes: dict[str, str] = {}
        with _Progress(len(todo), progress) as bar:
            while queue or pending:
                while queue and len(pending) < limit:
                    unit = queue.pop(0)
                    problem, notes[unit.run_id] = check(unit.task)  # on the driver: it reads the task files
                    if problem:
                        rec = unloadable_record(unit, problem)
                        store.append(rec)
                        outcome.ran += 1
                        outcome.unloadable += 1
                        bar.done(rec)
                        continue
                    ctx = unit.ctx.with_(device_index=0) if gpu else unit.ctx
                    pending[remote.remote(unit.task.path, ctx, unit.run_id, run_fn)] = unit
                    bar.start(unit)
                if not pending:
                    continue
                ready, _ = ray.wait(list(pending), num_returns=1)
                unit = pending.pop(ready[0])
                try:
                    out = ray.get(ready[0])
                except Exception as exc:  # noqa: BLE001 - the Ray task or its node died
                    out = {"result": None, "error": f"ray: {type(exc).__name__}: {exc}", "wall": 0.0, "host": ""}
                if out["result"] is not None:
                    rec = result_record(unit, out["result"], wall=out["wall"])
                else:
                    rec = result_record(unit, None, out["error"], out["wall"])
                if notes.get(unit.run_id):
                    rec["notes"] = [notes[unit.run_id]]
                rec["host"] = out.get("host", "")
                rec["executor"] = "ray"
                store.append(rec)
                outcome.ran += 1
                outcome.errors += rec["status"] == "error"
                bar.done(rec)
    outcome.records = store.select(outcome.keys)
    return outcome


__all__ = ["connect", "forwarded_env", "run_bench_ray"]
