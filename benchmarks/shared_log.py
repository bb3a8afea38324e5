"""What sharing the transitions through a Chroma server costs, and whether concurrent hosts lose anything.

    python benchmarks/shared_log.py                      # starts a `chroma run` server on loopback for the run
    python benchmarks/shared_log.py --events 2000 --writers 2 --per-writer 100     # a quick run

Measures, against a local memory folder and against a server (the same HTAMemory calls):
  1. one `record` (what the agent does after each evaluation), p50/p95;
  2. one `select_directions` with --events recorded transitions (the replica checks the server first), p50/p95;
  3. a fresh host catching up: opening a memory on a new replica of a server log of --events events;
  4. --writers processes, each with its own memory folder, recording --per-writer steps at once: steps lost
     (must be 0) and steps per second in all.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.htam import HTAMemory
from htam_agent.memory.schema import BACKENDS, OP_CLASSES, MemoryState, Outcome, StateKey
from htam_agent.memory.transitions import Event

ROOT = Path(__file__).resolve().parents[1]

DIRECTIONS = ("memory_access", "data_reuse", "parallel_mapping", "fusion_restructuring")


def _state(rng: random.Random) -> MemoryState:
    return MemoryState(StateKey(rng.choice(OP_CLASSES), "memory", "correct_slow", rng.choice(BACKENDS)),
                       f"state {rng.random():.6f}", 0.5 + rng.random())


def _outcome(rng: random.Random) -> Outcome:
    return Outcome(True, "correct_slow", 0.5 + rng.random()) if rng.random() < 0.7 else \
        Outcome(False, "incorrect", None, "wrong result")


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _ms(xs: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(xs) * 1e3, 2), "p95_ms": round(_pct(xs, 0.95) * 1e3, 2)}


def _time_record(mem: HTAMemory, n: int, rng: random.Random) -> list[float]:
    out = []
    for _ in range(n):
        st, d = _state(rng), rng.choice(DIRECTIONS)
        t = time.perf_counter()
        mem.record(st, d, [], _outcome(rng), history=[rng.choice(DIRECTIONS)])
        out.append(time.perf_counter() - t)
    return out


def _time_select(mem: HTAMemory, n: int, rng: random.Random) -> list[float]:
    out = []
    for _ in range(n):
        st = _state(rng)
        t = time.perf_counter()
        mem.select_directions(st, [rng.choice(DIRECTIONS)])
        out.append(time.perf_counter() - t)
    return out


def _bulk(mem: HTAMemory, n: int, rng: random.Random) -> None:
    for i in range(0, n, 500):
        mem.record_events([Event.from_step(_state(rng), rng.choice(DIRECTIONS), [], _outcome(rng),
                                           prev_direction=rng.choice(DIRECTIONS)) for _ in range(min(500, n - i))])


def _start_server(path: Path) -> tuple[subprocess.Popen, str]:
    import chromadb
    from chromadb.config import Settings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    chroma = [sys.executable, "-c", "import sys; from chromadb.cli.cli import app; sys.exit(app())"]
    proc = subprocess.Popen([*chroma, "run", "--path", str(path), "--port", str(port), "--host", "127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            chromadb.HttpClient(host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False)).heartbeat()
            return proc, f"http://127.0.0.1:{port}"
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("the chroma server did not start")


def _writer(folder: str, url: str, prefix: str, n: int, go: str) -> None:
    mem = HTAMemory(MemoryConfig(folder, chroma_url=url, collection_prefix=prefix))
    rng = random.Random(folder)
    while not Path(go).exists():
        time.sleep(0.005)
    _time_record(mem, n, rng)
    mem.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chroma-url", default=None)
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--ops", type=int, default=300)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--per-writer", type=int, default=250)
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        folder, url, prefix, n, go = args.worker
        _writer(folder, url, prefix, int(n), go)
        return

    tmp = Path(tempfile.mkdtemp(prefix="htam-shared-bench-"))
    proc, url = (None, args.chroma_url) if args.chroma_url else _start_server(tmp / "server")
    rng = random.Random(0)
    res: dict[str, object] = {"machine": f"{platform.node()} ({os.cpu_count()} CPUs, {platform.processor() or '?'})",
                              "date": time.strftime("%Y-%m-%d"), "events": args.events}
    try:
        prefix = f"b{uuid.uuid4().hex[:8]}"
        local = HTAMemory(MemoryConfig(tmp / "local"))
        shared = HTAMemory(MemoryConfig(tmp / "host-a", chroma_url=url, collection_prefix=prefix))
        res["record_local"] = _ms(_time_record(local, args.ops, rng))
        res["record_shared"] = _ms(_time_record(shared, args.ops, rng))
        _bulk(local, args.events - args.ops, rng)
        _bulk(shared, args.events - args.ops, rng)
        res["select_local"] = _ms(_time_select(local, args.ops, rng))
        res["select_shared"] = _ms(_time_select(shared, args.ops, rng))
        t = time.perf_counter()
        fresh = HTAMemory(MemoryConfig(tmp / "host-b", chroma_url=url, collection_prefix=prefix))
        n_fresh = fresh.transitions.count()
        res["fresh_replica_catch_up_s"] = round(time.perf_counter() - t, 2)
        assert n_fresh == args.events, (n_fresh, args.events)
        for m in (local, shared, fresh):
            m.close()

        prefix = f"w{uuid.uuid4().hex[:8]}"
        go = tmp / "go"
        procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(tmp / f"w{i}"), url, prefix,
                                   str(args.per_writer), str(go)]) for i in range(args.writers)]
        time.sleep(3.0)
        t = time.perf_counter()
        go.touch()
        if any(p.wait() != 0 for p in procs):
            raise SystemExit("a writer failed")
        wall = time.perf_counter() - t
        with HTAMemory(MemoryConfig(tmp / "reader", chroma_url=url, collection_prefix=prefix)) as reader:
            seen = reader.transitions.count()
        total = args.writers * args.per_writer
        res["concurrent"] = {"writers": args.writers, "steps": total, "seen_by_a_new_host": seen,
                             "lost": total - seen, "steps_per_s": round(total / wall, 1)}
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
