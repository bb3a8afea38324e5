"""Can a CPU timing be trusted? The same candidate evaluated N times in a row, each with a fresh eager baseline.

    python benchmarks/archive/cpu_timing_stability.py [--runs 5] [--root TREE] [--task T.py --candidate C.py] [--out F]

Run it alone on the machine (no other job, no other process importing torch). Each run is a fresh
`Evaluator` (so the eager baseline is measured again), default tier, the agent's timing plan. Printed per
run: the candidate's median and spread (IQR / median), the eager median and spread, the speedup; then the
spread of the candidate's medians across runs ((max - min) / min) and the worst eager spread. `--root`
evaluates with another checkout of the evaluator (before/after comparisons). Default candidate: the bundled
cpp kernel of fused_gemm_bias_gelu (a PyTorch GEMM and an OpenMP epilogue: two thread pools in one forward).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "htam_agent/bundled_tasks/suite/fused_gemm_bias_gelu.py"
CANDIDATE = next(iter(sorted((ROOT / "htam_agent/bundled_tasks/candidates/fused_gemm_bias_gelu").glob("cpp_*.py"))), None)


def driver(root: str, task: str, candidate: str, runs: int, build_root: str) -> None:
    from htam_agent.evaluation.parent.candidate import Candidate
    from htam_agent.evaluation.parent.evaluator import Evaluator
    from htam_agent.evaluation.parent.options import EvalOptions

    cand = Candidate(task_path=task, source=Path(candidate).read_text())
    Evaluator(EvalOptions(backend="cpp", baselines=(), timing=False, build_root=build_root), None).evaluate(
        cand, use_store=False)  # the build, excluded
    for _ in range(runs):
        ev = Evaluator(EvalOptions(backend="cpp", baselines=("eager",), build_root=build_root), store=None)
        t0 = time.perf_counter()
        v = ev.evaluate(cand, use_store=False)
        t = v.get("timing", {})
        print(json.dumps({"status": v["status"], "seconds": round(time.perf_counter() - t0, 2),
                          "candidate": t.get("candidate"), "eager": t.get("eager"),
                          "speedup": v.get("speedup_vs_eager"),
                          "flags": [f["name"] for f in v.get("flags", [])]}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--root", default=str(ROOT), help="checkout whose evaluator runs (default: this one)")
    ap.add_argument("--task", default=str(TASK))
    ap.add_argument("--candidate", default=str(CANDIDATE))
    ap.add_argument("--build-root", default=None)
    ap.add_argument("--out")
    ap.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    build_root = args.build_root or f"/tmp/htam-cpu-stability-{abs(hash(args.root)) % 10**6}"
    if args.driver:
        driver(args.root, args.task, args.candidate, args.runs, build_root)
        return
    cmd = [sys.executable, __file__, "--driver", "--root", args.root, "--task", args.task, "--candidate",
           args.candidate, "--runs", str(args.runs), "--build-root", build_root]
    proc = subprocess.Popen(cmd, env=dict(os.environ, PYTHONPATH=args.root), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=args.root)
    assert proc.stdout is not None
    rows = []
    for line in proc.stdout:
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        rows.append(r)
        c, e = r["candidate"] or {}, r["eager"] or {}
        print(f"run {len(rows)}: {r['status']:9s} candidate {c.get('median_ms', float('nan')):8.3f} ms "
              f"(spread {c.get('spread_pct', float('nan')):5.1f}%)  eager {e.get('median_ms', float('nan')):8.3f} ms "
              f"(spread {e.get('spread_pct', float('nan')):5.1f}%, mean {e.get('mean_ms', float('nan')):.3f})  "
              f"speedup {r['speedup']}  {r['flags']}", flush=True)
    proc.wait()
    meds = [r["candidate"]["median_ms"] for r in rows if r.get("candidate")]
    eager_spreads = [r["eager"]["spread_pct"] for r in rows if r.get("eager")]
    summary = {"runs": len(rows), "candidate_medians_ms": meds,
               "candidate_median_spread_pct": round(100 * (max(meds) - min(meds)) / min(meds), 2) if meds else None,
               "eager_spread_pct_max": max(eager_spreads) if eager_spreads else None,
               "root": args.root, "candidate": args.candidate,
               "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores",
               "date": time.strftime("%Y-%m-%d %H:%M"), "rows": rows}
    print(f"\ncandidate medians across runs: {summary['candidate_median_spread_pct']}% apart; worst eager spread "
          f"{summary['eager_spread_pct_max']}%")
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
