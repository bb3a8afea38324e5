"""What the default tier's anti-cheat checks add to the time-to-verdict of honest candidates.

    python benchmarks/anticheat_cost.py --backend cpp  [--repeats 3] [--settle 4] [--out FILE.json]
    python benchmarks/anticheat_cost.py --backend cuda [--repeats 3] [--out FILE.json]   # on the GPU host

Every bundled honest candidate of the backend (htam_agent/bundled_tasks/candidates/<task>/<backend>_*.py) is evaluated
with tier `bare` (correctness trials and timing only: what a harness without anti-cheat does) and tier
`default` (what the agent uses), alternately (bare, default, bare, default, ...) so that drift in machine
load hits both alike. Builds are made once beforehand and excluded; baselines (eager, torch.compile) are
excluded; the timing plan is the agent's default. Time-to-verdict is the wall time of `Evaluator.evaluate`
(worker start hidden by pre-started workers, as in the agent). Printed: per candidate the median of each
tier and the added fraction; overall, the sum over candidates of the medians, default / bare - 1.
Imports only torch and the standard library (through the evaluator): runs on a bare GPU host.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from htam_agent.backend_registry import BACKENDS
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions

ROOT = Path(__file__).resolve().parents[1]

SUITE = ROOT / "htam_agent" / "bundled_tasks" / "suite"
CANDS = ROOT / "htam_agent" / "bundled_tasks" / "candidates"


def honest(backend: str, only: str | None) -> list[tuple[str, Candidate]]:
    out = []
    for folder in sorted(CANDS.iterdir()):
        for c in sorted(folder.glob(f"{backend}_*.py")):
            if only and only not in f"{folder.name}/{c.stem}":
                continue
            out.append((f"{folder.name}/{c.stem}",
                        Candidate(task_path=str(SUITE / f"{folder.name}.py"), source=c.read_text(), name=folder.name)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cpp", choices=BACKENDS)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", help="substring of task/candidate names to keep")
    ap.add_argument("--build-root", help="default: a fresh temporary folder (the first pass builds)")
    ap.add_argument("--settle", type=float, default=0.0,
                    help="seconds to wait before each evaluation, so that the pre-started worker has finished "
                         "importing torch (on a machine with few cores its start-up otherwise competes with the "
                         "measured evaluation); 0 on the GPU host")
    ap.add_argument("--cold", action="store_true",
                    help="every evaluation gets its own C++ source (a comment), so it builds from scratch: the "
                         "time-to-verdict of a new candidate, as in the agent's loop (load_inline candidates only)")
    ap.add_argument("--out")
    args = ap.parse_args()

    build_root = args.build_root or tempfile.mkdtemp(prefix="htam-cost-builds-")
    cands = honest(args.backend, args.only)
    if not cands:
        sys.exit(f"no bundled {args.backend} candidates")
    evs = {tier: Evaluator(EvalOptions(backend=args.backend, baselines=(), build_root=build_root, tier=tier),
                           store=None) for tier in ("bare", "default")}
    if args.cold:
        cands = [(label, c) for label, c in cands if "load_inline" in c.source]
        print("one throwaway build first (the precompiled header), excluded...", flush=True)
        evs["bare"].evaluate(Candidate(task_path=cands[0][1].task_path, name=cands[0][1].name,
                                       source=re.sub(r"#include", "// pch warm-up\n#include", cands[0][1].source,
                                                     count=1)), use_store=False)
    else:
        print(f"building {len(cands)} candidates (excluded from the figures)...", flush=True)
        evs["bare"].evaluate_batch([c for _, c in cands])
    serial = iter(range(1 << 30))

    def variant(c: Candidate, tier: str) -> Candidate:
        if not args.cold:
            return c
        src = re.sub(r"#include", f"// anticheat_cost {tier} {next(serial)} {time.time()}\n#include", c.source, count=1)
        return Candidate(task_path=c.task_path, source=src, name=c.name)

    rows = []
    for label, c in cands:
        times: dict[str, list[float]] = {"bare": [], "default": []}
        statuses = set()
        for _ in range(args.repeats):
            for tier in ("bare", "default"):
                time.sleep(args.settle)
                t0 = time.perf_counter()
                v = evs[tier].evaluate(variant(c, tier), use_store=False)
                times[tier].append(time.perf_counter() - t0)
                statuses.add(f"{tier}:{v['status']}")
        med = {t: statistics.median(x) for t, x in times.items()}
        added = med["default"] / med["bare"] - 1
        rows.append({"candidate": label, "bare_s": round(med["bare"], 3), "default_s": round(med["default"], 3),
                     "added": round(added, 4), "statuses": sorted(statuses)})
        print(f"{label:42s} bare {med['bare']:6.2f} s  default {med['default']:6.2f} s  +{100 * added:5.1f}%  "
              f"{sorted(statuses)}", flush=True)
    tot_b = sum(r["bare_s"] for r in rows)
    tot_d = sum(r["default_s"] for r in rows)
    summary = {"backend": args.backend, "candidates": len(rows), "repeats": args.repeats, "settle_s": args.settle,
               "cold": args.cold,
               "bare_total_s": round(tot_b, 3), "default_total_s": round(tot_d, 3),
               "added_total": round(tot_d / tot_b - 1, 4),
               "added_median": round(statistics.median(r["added"] for r in rows), 4),
               "added_max": round(max(r["added"] for r in rows), 4),
               "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores",
               "date": time.strftime("%Y-%m-%d"), "rows": rows}
    print(f"\ntotal: bare {tot_b:.2f} s, default {tot_d:.2f} s: the default tier adds "
          f"{100 * summary['added_total']:.1f}% (median per candidate {100 * summary['added_median']:.1f}%, "
          f"max {100 * summary['added_max']:.1f}%)")
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
