"""Per-task wins and losses of one bench method against others (the counts quoted in RESULTS.md).

    python benchmarks/bench_compare.py benchmarks/results/bench_h200_triton_exemplar/results.jsonl.gz htam \
        refine best-of-n flat-memory --seed 0

A task counts as a win when the method's best speedup over eager beats the other's by more than --margin
(1% by default), a loss when it is that much behind, a tie otherwise; tasks where either is incorrect are left
out. The last record of each task and lane counts (a resumed bench appends).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path


def _speedups(path: Path, method: str, seed: int) -> dict[str, float]:
    opener = gzip.open if path.suffix == ".gz" else open
    last: dict[str, dict] = {}
    with opener(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            if r["method"] == method and r["seed"] == seed:
                last[r["task"]] = r
    return {t: r["speedup_vs_eager"] for t, r in last.items() if r["correct"] and r["speedup_vs_eager"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("method")
    ap.add_argument("others", nargs="+")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--margin", type=float, default=0.01)
    args = ap.parse_args()
    path = Path(args.results)
    mine = _speedups(path, args.method, args.seed)
    for other in args.others:
        theirs = _speedups(path, other, args.seed)
        both = sorted(set(mine) & set(theirs))
        win = sum(mine[t] > theirs[t] * (1 + args.margin) for t in both)
        loss = sum(mine[t] * (1 + args.margin) < theirs[t] for t in both)
        print(f"{args.method} vs {other} (seed {args.seed}, {len(both)} tasks): "
              f"win {win}, loss {loss}, tie {len(both) - win - loss}")


if __name__ == "__main__":
    main()
