"""The exemplar coder's suite figures from a verdict file (RESULTS.md, issue 6).

    python benchmarks/archive/exemplar_summary.py benchmarks/results/h200_exemplar_cuda_verdicts.jsonl [--backend cuda]
    python benchmarks/archive/exemplar_summary.py benchmarks/results/h200_exemplar_triton_verdicts.jsonl --backend triton \
        --compile-from benchmarks/results/h200_exemplar_cuda_verdicts.jsonl

``--compile-from``: a batch run with the eager baseline only takes its torch.compile times from the baseline
records of another verdict file of the same device (a different session: the eager medians of the two files
are compared per task, so the drift between sessions is printed next to the figures).

Per covered task: the best accepted candidate (the reach of a search over the space) and the family default
(the first enumerated variant, matched by source hash); geomeans per family and overall.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from collections import defaultdict
from pathlib import Path

from htam_agent.bundled_tasks import SUITE_DIR
from htam_agent.coder.base import UnsupportedTask
from htam_agent.coder.exemplar import enumerate_candidates


def _gm(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def _family(task: str) -> str:
    for prefix, name in (("elementwise", "elementwise chains"), ("fused", "GEMM/conv + fused epilogue"),
                         ("matmul", "matmul")):
        if task.startswith(prefix):
            return name
    return "row-wise reductions and norms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("verdicts")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--compile-from", default=None, help="verdict file whose baseline records give torch.compile")
    args = ap.parse_args()
    by_sha = {}
    eager: dict[str, float] = {}
    for line in Path(args.verdicts).read_text().splitlines():
        v = json.loads(line)
        if v.get("kind") == "candidate" and v["backend"] == args.backend:
            by_sha[(v["task"], v["candidate_sha256"])] = v  # one source can serve several tasks
        elif v.get("kind") == "baseline":
            eager[v["task"]] = v["timing"]["eager"]["median_ms"]
    if args.compile_from:
        other = {}
        for line in Path(args.compile_from).read_text().splitlines():
            v = json.loads(line)
            if v.get("kind") == "baseline" and "compile" in v["timing"]:
                other[v["task"]] = v["timing"]
        drift = [eager[t] / other[t]["eager"]["median_ms"] for t in eager if t in other]
        print(f"eager median here / in {Path(args.compile_from).name}: geomean {_gm(drift):.3f}, "
              f"range {min(drift):.3f}-{max(drift):.3f} over {len(drift)} tasks")
        for v in by_sha.values():
            if v["accepted"] and v.get("speedup_vs_compile") is None and v["task"] in other:
                v["speedup_vs_compile"] = other[v["task"]]["compile"]["median_ms"] / v["timing"]["candidate"]["median_ms"]
    rows = []
    for path in sorted(SUITE_DIR.glob("*.py")):
        try:
            space = enumerate_candidates(path.read_text(), args.backend, path.stem)
        except UnsupportedTask:
            continue
        vs = [by_sha.get((path.stem, hashlib.sha256(code.encode()).hexdigest())) for _, _, code in space]
        acc = [v for v in vs if v and v["accepted"]]
        default = vs[0] if vs[0] and vs[0]["accepted"] else None
        best = max(acc, key=lambda v: v["speedup_vs_eager"]) if acc else None
        rows.append((path.stem, len(space), sum(v is not None for v in vs), len(acc), best, default))
        print(f"{path.stem:32s} space {len(space):2d} evaluated {rows[-1][2]:2d} accepted {len(acc):2d} "
              f"best {best and best['speedup_vs_eager']} / {best and best['speedup_vs_compile']} "
              f"default {default and default['speedup_vs_eager']} / {default and default['speedup_vs_compile']}")
    groups = defaultdict(list)
    for r in rows:
        if r[4]:
            groups[_family(r[0])].append(r)
            groups["all covered"].append(r)
    for name, rs in groups.items():
        d = [r[5] for r in rs if r[5]]
        print(f"{name:30s} tasks {len(rs):2d} best {_gm([r[4]['speedup_vs_eager'] for r in rs]):.3f}x / "
              f"{_gm([r[4]['speedup_vs_compile'] for r in rs]):.3f}x  default "
              f"{_gm([v['speedup_vs_eager'] for v in d]):.3f}x / {_gm([v['speedup_vs_compile'] for v in d]):.3f}x")
    best = [r[4] for r in rows if r[4]]
    print(f"covered {len(rows)}; with a correct candidate {len(best)}; best faster than eager "
          f"{sum(v['speedup_vs_eager'] > 1 for v in best)}, than torch.compile {sum(v['speedup_vs_compile'] > 1 for v in best)}")


if __name__ == "__main__":
    main()
