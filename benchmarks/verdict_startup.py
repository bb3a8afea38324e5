"""Time to verdict with checkers forked from the launcher against checkers started as fresh interpreters.

    python benchmarks/verdict_startup.py [--rounds 3] [--entries 12] [--set cheats|honest] [--paired]

Each round runs the first `--entries` cheats (or honest candidates) of the cpp cheat catalogue (tests/cheats,
built once before the rounds), back to back as the test suite does, once per mode, in a process of its own per mode
(`HTAM_LAUNCHER=1` or `0`), modes alternating. The evaluator is the test suite's: timing on with a short
plan, no baselines; with `--paired` the eager baseline is timed beside every candidate (the CPU's default).
Printed: one JSON line per round and mode (the wall of each verdict, the checker's and sandbox's start-up
as the verdict records them), then per mode the median verdict wall with its range over rounds. Measure
alone: CPU timings on a busy 2-core machine are noise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = r'''
import json, sys, time
sys.path.insert(0, sys.argv[1])
from cheat_catalogue import CPP_CHEATS, HONEST, task_path
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions
n, build_root, paired, which = int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1", sys.argv[5]
opts = EvalOptions(backend="cpp", baselines=("eager",) if paired else (), timing=True,
                   timing_plan={"target_s": 0.05, "min_reps": 3, "max_reps": 10}, build_root=build_root,
                   run_timeout_s=120, paired_eager=paired or None)
ev = Evaluator(opts, store=None)
out = []
for c in (CPP_CHEATS if which == "cheats" else HONEST)[:n]:
    t = time.perf_counter()
    v = ev.evaluate(Candidate(task_path=str(task_path(c.task)), source=c.source), use_store=False)
    ph = v.get("phase_seconds") or {}
    out.append({"id": c.id, "wall_s": round(time.perf_counter() - t, 3), "status": v["status"],
                "checker_imports_s": ph.get("imports"), "sandbox_imports_s": ph.get("sandbox_imports")})
print(json.dumps(out))
'''


def run(mode: str, n: int, build_root: str, paired: bool, which: str) -> list[dict]:
    env = dict(os.environ, HTAM_LAUNCHER="1" if mode == "launcher" else "0", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "tests" / "cheats"), str(n), build_root,
                          "1" if paired else "0", which], env=env, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"{mode} run failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--entries", type=int, default=12)
    ap.add_argument("--paired", action="store_true")
    ap.add_argument("--set", choices=("cheats", "honest"), default="cheats",
                    help="the catalogue's cheats (turned down early) or its honest candidates (timed)")
    ap.add_argument("--build-root", default=None)
    args = ap.parse_args()
    build_root = args.build_root or tempfile.mkdtemp(prefix="htam-startup-")
    run("launcher", args.entries, build_root, args.paired, args.set)  # builds, once, excluded
    walls: dict[str, list[float]] = {"launcher": [], "fresh": []}
    print(json.dumps({"machine": platform.node(), "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d"),
                      "entries": args.entries, "set": args.set, "paired": args.paired}))
    for r in range(args.rounds):
        for mode in ("fresh", "launcher") if r % 2 else ("launcher", "fresh"):
            got = run(mode, args.entries, build_root, args.paired, args.set)
            walls[mode] += [g["wall_s"] for g in got[1:]]  # the first verdict of a process starts it all
            print(json.dumps({"round": r, "mode": mode, "verdicts": got}), flush=True)
    for mode, ws in walls.items():
        print(f"{mode:9s} verdict wall: median {statistics.median(ws):.2f} s, range {min(ws):.2f}-{max(ws):.2f} s, "
              f"n={len(ws)} (first verdict of each process excluded)")
    ratio = statistics.median(walls["launcher"]) / statistics.median(walls["fresh"])
    print(f"launcher / fresh, medians: {ratio:.3f}")


if __name__ == "__main__":
    main()
