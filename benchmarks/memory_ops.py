"""Latency and footprint of the HTAM memory: direction selection and strategy retrieval with 1k, 10k and 100k
recorded transitions and 10k strategies.

    python benchmarks/memory_ops.py                       # defaults: sizes 1000,10000,100000; 10000 strategies
    python benchmarks/memory_ops.py --sizes 1000 --strategies 500 --queries 50   # a quick run

Transitions are inserted cumulatively (1k, then up to 10k, then up to 100k) into one memory; the 10k strategies
(the 51 shipped ones plus generated variants) are embedded once. For each size, a fresh HTAMemory is opened
(cold: folds the whole event log), then Q queries are timed, each with a new state text (no embedding cache
hit), a random operator class, status, bottleneck, backend and history. Target (issue 4): p95 of one selection
plus one retrieval <= 50 ms at 10k transitions on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.htam import HTAMemory
from htam_agent.memory.schema import (
    BACKENDS,
    BOTTLENECKS,
    MEMORY_STATUSES,
    OP_CLASSES,
    START,
    MemoryState,
    Outcome,
    StateKey,
    Strategy,
)
from htam_agent.memory.transitions import Event

ROOT = Path(__file__).resolve().parents[1]

WORDS = ("tiled", "vectorized", "fused", "warp-level", "persistent", "pipelined", "blocked", "packed", "masked",
         "split", "cached", "unrolled", "streaming", "grouped", "two-pass", "online", "in-register", "swizzled")
OPS_TEXT = {"elementwise": "GELU over {n} floats", "reduction": "row sum of a {n}x{n} matrix",
            "normalization": "LayerNorm with {n} features", "matmul": "fp32 GEMM {n}x{n}x{n}",
            "convolution": "3x3 conv2d with {n} channels", "pooling": "max pool 3x3 over {n}x{n} images",
            "attention": "attention with sequence length {n}", "scan": "cumsum along rows of length {n}",
            "fused": "GEMM + bias + GELU, N={n}", "model": "small CNN, batch {n}", "other": "custom op size {n}"}


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    i = min(len(xs) - 1, max(0, math.ceil(q / 100 * len(xs)) - 1))
    return xs[i]


def rss_mib() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dir_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20 if path.exists() else 0.0


def machine() -> dict[str, str]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        mem = f"{int(Path('/proc/meminfo').read_text().split()[1]) / 2**20:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    import chromadb
    import torch

    return {"cpu": cpu, "cores": str(os.cpu_count()), "memory": mem, "python": platform.python_version(),
            "torch": torch.__version__, "chromadb": chromadb.__version__, "os": platform.platform(),
            "loadavg": " ".join(f"{x:.2f}" for x in os.getloadavg())}


def make_strategies(mem: HTAMemory, n_total: int, rng: random.Random) -> list[Strategy]:
    """Variants of the shipped strategies with other titles, operator classes and backends."""
    seed = list(mem.catalog.strategies)
    out: list[Strategy] = []
    for i in range(max(0, n_total - len(seed))):
        base = seed[i % len(seed)]
        ops = rng.sample(OP_CLASSES, rng.randint(1, 4))
        backends = rng.sample(BACKENDS, rng.randint(1, 3))
        adj = " ".join(rng.sample(WORDS, 2))
        out.append(base.model_copy(update={
            "id": f"gen_{i:05d}_{base.id}", "source": "learned",
            "title": f"{base.title} ({adj} variant {i})",
            "description": f"{adj.capitalize()} form of: {base.description}",
            "applicability": base.applicability.model_copy(update={"op_classes": ops, "backends": backends}),
            "code_sketch": {b: base.code_sketch.get(b) or base.code_sketch[base.applicability.backends[0]]
                            for b in backends},
        }))
    return out


def make_events(n: int, directions: list[str], by_dir: dict[str, list[str]], rng: random.Random,
                start_i: int) -> list[Event]:
    """Synthetic but structured experience: each (previous, next) pair has its own success rate and gain."""
    quality = {(a, b): rng.uniform(-0.3, 0.6) for a in [START, *directions] for b in directions}
    events = []
    for i in range(n):
        key = StateKey(rng.choice(OP_CLASSES), rng.choice(BOTTLENECKS), rng.choice(MEMORY_STATUSES), rng.choice(BACKENDS))
        prev = rng.choice([START, *directions])
        d = rng.choice(directions)
        q = quality[(prev, d)]
        speed = rng.uniform(0.2, 3.0)
        st = MemoryState(key, f"task {i % 250}", speed)
        if rng.random() < 0.55 + 0.4 * q:
            out = Outcome(True, "correct_slow", speed * math.exp(rng.gauss(q, 0.3)))
        else:
            out = Outcome(False, rng.choice(["compile_error", "incorrect"]), None,
                          rng.choice(["illegal memory access", "max abs err 3e-3", "nvcc: expected ';'", "timeout"]))
        strategies = rng.sample(by_dir[d], rng.randint(1, 3))
        events.append(Event.from_step(st, d, strategies, out, prev_direction=prev, task_id=f"t{(start_i + i) % 250}",
                                      uid=f"bench{start_i + i:09d}"))
    return events


def random_state(rng: random.Random, i: int) -> MemoryState:
    op = rng.choice(OP_CLASSES)
    text = OPS_TEXT[op].format(n=rng.choice([256, 512, 1024, 2048, 4096, 8192])) + \
        f"; query {i}: {rng.choice(WORDS)} kernel at {rng.uniform(0.1, 0.9):.0%} of roofline"
    return MemoryState(StateKey(op, rng.choice(BOTTLENECKS), rng.choice(MEMORY_STATUSES), rng.choice(BACKENDS)), text,
                       rng.uniform(0.3, 2.0))


def bench_size(cfg: MemoryConfig, n: int, queries: int, rng: random.Random) -> dict[str, float]:
    rss0 = rss_mib()
    t0 = time.perf_counter()
    mem = HTAMemory(cfg)
    directions = mem.directions
    n_events = mem.transitions.count()
    mem.select_directions(random_state(rng, -1))  # cold: folds the whole event log
    cold_s = time.perf_counter() - t0
    mem.retrieve_strategies(directions[0], random_state(rng, -2), k=5)  # opens Chroma, loads the model
    sel, ret, both, cpu = [], [], [], []
    for i in range(queries):
        st = random_state(rng, i)
        hist = [rng.choice(directions) for _ in range(rng.randint(0, 5))]
        c = time.process_time()
        t = time.perf_counter()
        ranked = mem.select_directions(st, hist, seed=i)
        t1 = time.perf_counter()
        got = mem.retrieve_strategies(ranked[0].id, st, k=5)
        t2 = time.perf_counter()
        cpu.append(time.process_time() - c)  # CPU time of the process: what a dedicated machine would see
        assert ranked and got is not None
        sel.append(t1 - t)
        ret.append(t2 - t1)
        both.append(t2 - t)
    rec = []
    for i in range(min(queries, 50)):  # one agent record: a single committed, fsynced transaction
        st = random_state(rng, 10_000 + i)
        d = rng.choice(directions)
        t = time.perf_counter()
        mem.record(st, d, [], Outcome(True, "correct_slow", 1.0), history=[rng.choice(directions)])
        rec.append(time.perf_counter() - t)
    res = {
        "transitions": n_events, "cold_open_s": cold_s,
        "select_p50_ms": 1e3 * percentile(sel, 50), "select_p95_ms": 1e3 * percentile(sel, 95),
        "retrieve_p50_ms": 1e3 * percentile(ret, 50), "retrieve_p95_ms": 1e3 * percentile(ret, 95),
        "both_p50_ms": 1e3 * percentile(both, 50), "both_p95_ms": 1e3 * percentile(both, 95),
        "both_mean_ms": 1e3 * statistics.fmean(both),
        "both_cpu_p50_ms": 1e3 * percentile(cpu, 50), "both_cpu_p95_ms": 1e3 * percentile(cpu, 95),
        "record_p50_ms": 1e3 * percentile(rec, 50), "record_p95_ms": 1e3 * percentile(rec, 95),
        "rss_mib": rss_mib(), "rss_delta_open_mib": rss_mib() - rss0,
        "sqlite_mib": mem.transitions.size_bytes() / 2**20, "chroma_mib": dir_mib(cfg.chroma_path),
    }
    mem.close()
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000", help="cumulative transition counts")
    ap.add_argument("--strategies", type=int, default=10_000, help="strategies in the store (seed + generated)")
    ap.add_argument("--queries", type=int, default=200, help="timed selection+retrieval pairs per size")
    ap.add_argument("--dir", type=Path, default=None, help="memory directory (default: a temporary one)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results as JSON")
    ap.add_argument("--reuse-chroma", type=Path, default=None,
                    help="copy this chroma folder (from an earlier run with the same --strategies and --seed) into "
                         "the new memory: the content hashes match, so nothing is re-embedded")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    tmp = None
    if args.dir is None:
        tmp = Path(tempfile.mkdtemp(prefix="htam_bench_"))
    data_dir = args.dir or tmp
    cfg = MemoryConfig(data_dir)
    if args.reuse_chroma:
        shutil.copytree(args.reuse_chroma, cfg.chroma_path, dirs_exist_ok=False)
    results: dict[str, object] = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine(),
                                  "command": " ".join([Path(sys.executable).name, *sys.argv]), "sizes": []}
    try:
        mem = HTAMemory(cfg)
        t = time.perf_counter()
        mem.add_strategies(make_strategies(mem, args.strategies, rng))
        mem.strategy_store()  # embeds and indexes them
        results["strategies"] = mem.strategy_store().count_strategies()
        results["index_build_s"] = time.perf_counter() - t
        results["index_reused"] = bool(args.reuse_chroma)
        print(f"indexed {results['strategies']} strategies in {results['index_build_s']:.1f} s", flush=True)
        by_dir: dict[str, list[str]] = {}
        for s in mem.strategies().values():
            by_dir.setdefault(s.direction, []).append(s.id)
        directions = mem.directions
        mem.close()
        have = 0
        for n in (int(x) for x in args.sizes.split(",")):
            with HTAMemory(cfg) as m:
                have = m.transitions.count()
                t = time.perf_counter()
                for lo in range(have, n, 5000):
                    m.record_events(make_events(min(5000, n - lo), directions, by_dir, rng, lo))
                ins = time.perf_counter() - t
            res = bench_size(cfg, n, args.queries, rng)
            res["bulk_insert_s"] = ins
            results["sizes"].append(res)  # type: ignore[union-attr]
            print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in res.items()}), flush=True)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    print(markdown(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


def markdown(r: dict) -> str:
    m = r["machine"]
    lines = [f"Date: {r['date']}. Machine: {m['cpu']}, {m['cores']} cores, {m['memory']}, {m['os']}; Python "
             f"{m['python']}, torch {m['torch']}, chromadb {m['chromadb']}; load average at start {m['loadavg']}.",
             f"Command: `{r['command']}`. Strategies indexed: {r['strategies']} ("
             + ("re-used index, content hashes checked" if r.get("index_reused") else "embedding + indexing")
             + f" {r['index_build_s']:.0f} s, once).", "",
             "| transitions | select p50 / p95 (ms) | retrieve p50 / p95 (ms) | select+retrieve p50 / p95 (ms) "
             "| select+retrieve CPU p50 / p95 (ms) | record p50 / p95 (ms) | cold open (s) | RSS (MiB) "
             "| SQLite (MiB) | Chroma (MiB) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in r["sizes"]:
        lines.append(f"| {s['transitions']:,} | {s['select_p50_ms']:.2f} / {s['select_p95_ms']:.2f} | "
                     f"{s['retrieve_p50_ms']:.1f} / {s['retrieve_p95_ms']:.1f} | "
                     f"{s['both_p50_ms']:.1f} / {s['both_p95_ms']:.1f} | "
                     f"{s['both_cpu_p50_ms']:.1f} / {s['both_cpu_p95_ms']:.1f} | "
                     f"{s['record_p50_ms']:.1f} / {s['record_p95_ms']:.1f} | {s['cold_open_s']:.2f} | "
                     f"{s['rss_mib']:.0f} | {s['sqlite_mib']:.1f} | {s['chroma_mib']:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
