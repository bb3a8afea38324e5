"""What paired timing costs: time to verdict of built honest cpp candidates with the eager baseline timed
beside each candidate (the CPU's default) and on its own, alternating, in one run.

    python benchmarks/pairing_cost.py [--repeats 3] [--only norm_rmsnorm] [--settle 4]

Both sides evaluate the same bundled honest candidates at the default tier with the agent's timing plan
and `baselines=("eager",)`; every candidate is built first (excluded), and each side's baseline is
measured once before the timed rounds (as an agent's run does, once per task). Rounds alternate unpaired,
paired, ..., `--settle` seconds apart so pre-started processes have finished importing. Printed: a JSON
line per evaluation, then per candidate the median of each side, and overall the sum of medians and
paired / unpaired - 1. Measure alone: CPU timings on a busy 2-core machine are noise.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time

from htam_agent.bundled_tasks import SUITE_DIR, candidate_files
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default=None, help="a substring of task/candidate names to keep")
    ap.add_argument("--settle", type=float, default=4.0)
    ap.add_argument("--build-root", default=None)
    args = ap.parse_args()
    build_root = args.build_root or tempfile.mkdtemp(prefix="htam-pairing-")
    cands = [(f"{p.parent.name}/{p.stem}", Candidate(task_path=str(SUITE_DIR / f"{p.parent.name}.py"),
                                                     source=p.read_text()))
             for stem in sorted(q.stem for q in SUITE_DIR.glob("*.py")) for p in candidate_files(stem, "cpp")
             if not args.only or args.only in f"{p.parent.name}/{p.stem}"]
    if not cands:
        raise SystemExit(f"no bundled cpp candidate matches --only {args.only!r}")
    sides = {name: Evaluator(EvalOptions(backend="cpp", baselines=("eager",), paired_eager=on, build_root=build_root),
                             store=None) for name, on in (("unpaired", False), ("paired", True))}
    for ev in sides.values():
        for _, c in cands:
            ev.compile_only(c)
            ev.baseline(c)
    took: dict[str, dict[str, list[float]]] = {s: {n: [] for n, _ in cands} for s in sides}
    for r in range(args.repeats):
        for side, ev in sides.items():
            for name, c in cands:
                time.sleep(args.settle)
                t0 = time.perf_counter()
                v = ev.evaluate(c, use_store=False)
                dt = time.perf_counter() - t0
                took[side][name].append(dt)
                print(json.dumps({"round": r, "side": side, "candidate": name, "seconds": round(dt, 3),
                                  "status": v["status"], "speedup_vs_eager": v.get("speedup_vs_eager")}), flush=True)
    summary = {}
    for side in sides:
        summary[side] = round(sum(statistics.median(t) for t in took[side].values()), 3)
    for name, _ in cands:
        a, b = statistics.median(took["unpaired"][name]), statistics.median(took["paired"][name])
        print(json.dumps({"candidate": name, "unpaired_s": round(a, 3), "paired_s": round(b, 3),
                          "change": round(b / a - 1, 4)}))
    print(json.dumps({"machine": platform.node(), "candidates": len(cands), "repeats": args.repeats,
                      "sum_of_medians_s": summary, "change": round(summary["paired"] / summary["unpaired"] - 1, 4)}))


if __name__ == "__main__":
    main()
