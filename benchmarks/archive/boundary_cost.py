"""What the trust boundary costs: time-to-verdict of built honest candidates, before and after, in one run.

    python benchmarks/archive/boundary_cost.py --old-root OLD_TREE --backend cpp  [--repeats 3] [--settle 4] [--out F]
    python benchmarks/archive/boundary_cost.py --old-root OLD_TREE --backend cuda [--repeats 3] [--out F]   # GPU host

OLD_TREE is a checkout of the evaluator before the boundary (e.g. `git archive 1aa6e87 | tar -x -C OLD`).
Each side runs in its own driver process that imports the evaluator from its tree, builds every bundled
honest candidate of the backend first (excluded), then times `Evaluator.evaluate` (default tier, no
baselines, the agent's timing plan) on each candidate, `--settle` seconds apart so pre-started processes
have finished importing. Rounds alternate old, new, old, new... so drift in machine load hits both.
Printed: per candidate the median of each side and the change; overall, the sum of medians, new / old - 1.
Imports only torch and the standard library (through the evaluator): runs on a bare GPU host.
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

NEW_ROOT = Path(__file__).resolve().parents[2]


def driver(root: str, backend: str, build_root: str, repeats: int, settle: float, only: str | None) -> None:
    from htam_agent.evaluation.parent.candidate import Candidate
    from htam_agent.evaluation.parent.evaluator import Evaluator
    from htam_agent.evaluation.parent.options import EvalOptions

    data = Path(root) / "htam_agent" / "bundled_tasks"
    if not data.is_dir():  # a tree from before issue 26's renames
        data = Path(root) / "htam_agent" / "tasks"
    cands_dir, suite = data / "candidates", data / "suite"
    cands = [(f"{d.name}/{c.stem}", Candidate(task_path=str(suite / f"{d.name}.py"), source=c.read_text(), name=d.name))
             for d in sorted(cands_dir.iterdir()) for c in sorted(d.glob(f"{backend}_*.py"))
             if not only or only in f"{d.name}/{c.stem}"]
    ev = Evaluator(EvalOptions(backend=backend, baselines=(), build_root=build_root), store=None)
    ev.evaluate_batch([c for _, c in cands])  # builds, excluded
    for _ in range(repeats):
        for label, c in cands:
            time.sleep(settle)
            t0 = time.perf_counter()
            v = ev.evaluate(c, use_store=False)
            print(json.dumps({"candidate": label, "seconds": time.perf_counter() - t0, "status": v["status"]}),
                  flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old-root")
    ap.add_argument("--backend", default="cpp", choices=("cpp", "cuda", "triton"))
    ap.add_argument("--rounds", type=int, default=2, help="driver runs per side, alternating")
    ap.add_argument("--repeats", type=int, default=2, help="evaluations per candidate in each driver run")
    ap.add_argument("--settle", type=float, default=0.0)
    ap.add_argument("--only")
    ap.add_argument("--out")
    ap.add_argument("--driver", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.driver:
        driver(args.driver[0], args.backend, args.driver[1], args.repeats, args.settle, args.only)
        return
    if not args.old_root:
        ap.error("--old-root is required")
    sides = {"old": str(Path(args.old_root).resolve()), "new": str(NEW_ROOT)}
    builds = {s: tempfile.mkdtemp(prefix=f"htam-boundary-{s}-") for s in sides}
    times: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    statuses: dict[str, set[str]] = {}
    for _ in range(args.rounds):
        for side, root in sides.items():
            env = dict(os.environ, PYTHONPATH=root)
            cmd = [sys.executable, __file__, "--driver", root, builds[side], "--backend", args.backend,
                   "--repeats", str(args.repeats), "--settle", str(args.settle)] + (["--only", args.only] if args.only else [])
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                    cwd=root)
            assert proc.stdout is not None
            for line in proc.stdout:  # printed as they come: a run cut short still leaves its figures
                if line.startswith("{"):
                    r = json.loads(line)
                    times[side].setdefault(r["candidate"], []).append(r["seconds"])
                    statuses.setdefault(r["candidate"], set()).add(f"{side}:{r['status']}")
                    print(f"{side} {r['candidate']} {r['seconds']:.2f} s {r['status']}", flush=True)
            if proc.wait():
                print(f"{side} driver exited with status {proc.returncode}", file=sys.stderr)
    rows = []
    for label in sorted(set(times["new"]) & set(times["old"])):
        old, new = statistics.median(times["old"][label]), statistics.median(times["new"][label])
        rows.append({"candidate": label, "old_s": round(old, 3), "new_s": round(new, 3),
                     "old_spread_s": round(max(times["old"][label]) - min(times["old"][label]), 3),
                     "new_spread_s": round(max(times["new"][label]) - min(times["new"][label]), 3),
                     "change": round(new / old - 1, 4), "statuses": sorted(statuses[label])})
        print(f"{label:44s} old {old:6.2f} s  new {new:6.2f} s  {100 * (new / old - 1):+6.1f}%  "
              f"{sorted(statuses[label])}", flush=True)
    tot_o, tot_n = sum(r["old_s"] for r in rows), sum(r["new_s"] for r in rows)
    summary = {"backend": args.backend, "candidates": len(rows), "rounds": args.rounds, "repeats": args.repeats,
               "settle_s": args.settle, "old_total_s": round(tot_o, 3), "new_total_s": round(tot_n, 3),
               "change_total": round(tot_n / tot_o - 1, 4),
               "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores",
               "date": time.strftime("%Y-%m-%d"), "rows": rows}
    print(f"\ntotal: old {tot_o:.2f} s, new {tot_n:.2f} s: {100 * summary['change_total']:+.1f}%")
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
