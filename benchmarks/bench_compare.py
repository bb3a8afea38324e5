"""Per-task wins and losses of one bench method against others, and each method's geomean (the figures quoted
in RESULTS.md).

    python benchmarks/bench_compare.py benchmarks/results/bench_h200_triton_exemplar/results.jsonl.gz htam \
        refine best-of-n flat-memory --seed 0
    python benchmarks/bench_compare.py benchmarks/results/bench_issue17_kb/kb_after/results.jsonl.gz htam \
        refine flat-memory random-direction --seeds 0,1,2 \
        --space benchmarks/results/h200_kb_exemplar_cuda_verdicts.jsonl

A task counts as a win when the method's best speedup over eager beats the other's by more than --margin
(1% by default), a loss when it is that much behind, a tie otherwise; tasks where either is incorrect are left
out; with several seeds the counts add up over (task, seed). The geomean is over the tasks every method got
right, averaged over the seeds. The last record of each task and lane counts (a resumed bench appends).
`--space VERDICTS` adds the geomean of what the candidate space holds for the same tasks: its best candidate
and its default (the `_ex00_` file of `benchmarks/exemplar_kernelbench.py`, or a `*default*` file).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
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


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def _space(path: Path) -> tuple[dict[str, float], dict[str, float]]:
    """Per task id: the best accepted candidate's speedup over eager, and the default candidate's."""
    best: dict[str, float] = {}
    default: dict[str, float] = {}
    for line in path.read_text().splitlines():
        v = json.loads(line)
        if v.get("kind") != "candidate" or not v.get("accepted") or not v.get("speedup_vs_eager"):
            continue
        task = v.get("task_id") or v.get("task")
        best[task] = max(best.get(task, 0.0), v["speedup_vs_eager"])
        name = Path(v.get("candidate_path") or "").name
        if "_ex00_" in name or "default" in name:
            default[task] = v["speedup_vs_eager"]
    return best, default


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("method")
    ap.add_argument("others", nargs="+")
    ap.add_argument("--seed", type=int, default=None, help="one seed (default 0)")
    ap.add_argument("--seeds", default=None, help="comma list of seeds: counts add up, geomeans are averaged")
    ap.add_argument("--margin", type=float, default=0.01)
    ap.add_argument("--space", type=Path, default=None, help="verdicts of the whole candidate space (JSONL)")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else [args.seed or 0]
    path = Path(args.results)
    methods = [args.method, *args.others]
    runs = {(m, s): _speedups(path, m, s) for m in methods for s in seeds}
    common = sorted(set.intersection(*(set(v) for v in runs.values())))
    label = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {','.join(map(str, seeds))}"
    print(f"{len(common)} tasks every method got right ({label}); geomean over eager:")
    for m in methods:
        per_seed = [_geomean([runs[(m, s)][t] for t in common]) for s in seeds]
        print(f"  {m}: {sum(per_seed) / len(per_seed):.3f}x" + (
            f" (per seed {', '.join(f'{g:.3f}' for g in per_seed)})" if len(seeds) > 1 else ""))
    if args.space:
        best, default = _space(args.space)
        have = [t for t in common if t in best]
        print(f"  the candidate space ({len(have)} of the tasks): best {_geomean([best[t] for t in have]):.3f}x"
              + (f", default {_geomean([default[t] for t in have]):.3f}x" if all(t in default for t in have) else ""))
    for other in args.others:
        win = loss = tie = 0
        for s in seeds:
            mine, theirs = runs[(args.method, s)], runs[(other, s)]
            for t in sorted(set(mine) & set(theirs)):
                if mine[t] > theirs[t] * (1 + args.margin):
                    win += 1
                elif mine[t] * (1 + args.margin) < theirs[t]:
                    loss += 1
                else:
                    tie += 1
        print(f"{args.method} vs {other} ({label}, {win + loss + tie} task runs): win {win}, loss {loss}, tie {tie}")


if __name__ == "__main__":
    main()
