"""Does the shipped memory make the first step better on a problem it never saw? (issue 35, part 5's budget)

    python benchmarks/shipped_first_step.py TABLE --kb KB/KernelBench --out DIR [--ks 1,2]

For each of the protocol's 5 folds (benchmarks/folds/<table>.folds.json, drawn once from PROTOCOL_SEED if missing:
docs/memory_protocol.md), the htam lane is trained on the other four folds exactly as the shipped memory is trained
on the whole table (memory_cv.train_lane), frozen, and each problem of the fold runs its **first step only**
(steps=1, K candidates, K evaluations, no repairs, learning off) three ways, every evaluation replayed from TABLE:
`shipped` (htam on the trained lane: what a fresh install gets on a problem outside the table), `empty` (htam on
an empty memory: a fresh install without shipped experience: the seed directions and strategies only) and `refine`
(no memory). Reports each arm's geomean speedup over eager of the first step's best (nothing accepted: 1.0) with a
bootstrap 95% interval, the paired ratio shipped / empty with its interval, wins / ties / losses and per class.
Resumable: trained lanes are kept (DIR/memory/fold<F>/TRAINED.json), finished runs too (DIR/results.jsonl).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ARMS = ("shipped", "empty", "refine")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", type=Path)
    ap.add_argument("--kb", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--ks", default="1,2", help="candidates in the first step (one run per K)")
    args = ap.parse_args(argv)

    from htam_agent.bench import memory_cv as cv
    from htam_agent.bench.table import load_table
    from htam_agent.run.resources import clear_cache

    table = load_table(args.table)
    folds = cv.load_or_draw_folds(table, cv.default_folds_path(args.table), draw=True)
    classes = cv.problem_classes(table)
    gateway = cv.replay_gateway(table, args.kb)
    backend, sizes = gateway.backend, {r.problem: r.size for r in table}
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    done = {(r["arm"], r["k"], r["problem"]) for r in map(json.loads, results.read_text().splitlines())} \
        if results.exists() else set()
    ks = [int(k) for k in args.ks.split(",")]
    empty = out / "memory" / "empty"
    empty.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    for fold in range(cv.N_FOLDS):
        test = sorted(p for p, f in folds.items() if f == fold)
        train = sorted(p for p, f in folds.items() if f != fold)
        lane = out / "memory" / f"fold{fold}"
        marker = lane / "TRAINED.json"
        if not marker.exists():
            cv.train_lane(gateway, cv.METHODS["htam"], train, lane, out / "runs", args.kb, tag=f"fold {fold}")
            marker.write_text(json.dumps({"events": cv.memory_events(lane), "problems": train}) + "\n")
        frozen = json.loads(marker.read_text())["events"]
        for k in ks:
            for p in test:
                for arm in ARMS:
                    if (arm, k, p) in done:
                        continue
                    method = cv.METHODS["refine" if arm == "refine" else "htam"]
                    mem = {"shipped": lane, "empty": empty, "refine": None}[arm]
                    ctx = cv._ctx(method, k, k, cv.DET_SEED, False, mem, out / "runs", backend, sizes[p])
                    ctx = ctx.with_(steps=1)
                    r = cv._one_run(cv.task_path(args.kb, p), ctx, gateway, f"first-{arm}-k{k}-{p.replace('/', '_')}",
                                    False)
                    rec = {"fold": fold, "arm": arm, "k": k, "problem": p, "op_class": classes[p], **r}
                    with results.open("a") as fh:
                        fh.write(json.dumps(rec, sort_keys=True) + "\n")
                    print(f"[fold {fold}] k{k} {arm:7s} {p}: {r['speedup_eager']} ({r['directions']})", flush=True)
        clear_cache()
        if cv.memory_events(lane) != frozen or cv.memory_events(empty) != 0:
            sys.exit(f"{lane}: the frozen memory changed during its test runs (learning was not off)")

    recs = [json.loads(x) for x in results.read_text().splitlines()]
    assert all(r["not_evaluated"] == 0 for r in recs), "a step the table could not answer: no figure"
    summary: dict[str, object] = {"table": args.table.name, "problems": len(classes), "wall_s": round(time.time() - t0, 1),
                                  "configs": {}}
    lines = [f"first step on held-out problems of {args.table.name} ({len(classes)} problems, 5 folds)"]
    for k in ks:
        by: dict[str, dict[str, float]] = defaultdict(dict)
        for r in recs:
            if r["k"] == k:
                by[r["arm"]][r["problem"]] = r["speedup_eager"] or 1.0
        conf: dict[str, object] = {a: {"geomean": cv.geomean(list(by[a].values())), "ci": cv.bootstrap_ci(by[a]),
                                       "n": len(by[a])} for a in ARMS}
        ratio = cv.paired_ratio_ci(by["shipped"], by["empty"])
        wins = sum(by["shipped"][p] > by["empty"][p] * 1.0001 for p in by["shipped"])
        losses = sum(by["shipped"][p] * 1.0001 < by["empty"][p] for p in by["shipped"])
        per_cls: dict[str, dict[str, float]] = {}
        for c in sorted(set(classes.values())):
            ps = [p for p in by["shipped"] if classes[p] == c]
            per_cls[c] = {a: cv.geomean([by[a][p] for p in ps]) for a in ARMS} | {"n": len(ps)}
        conf |= {"shipped / empty": list(ratio), "wins": wins, "losses": losses,
                 "ties": len(by["shipped"]) - wins - losses, "per_class": per_cls}
        summary["configs"][f"k{k}"] = conf  # type: ignore[index]
        lines.append(f"K={k}: " + ", ".join(f"{a} {conf[a]['geomean']:.3f}x [{conf[a]['ci'][0]:.3f}, "  # type: ignore[index]
                                             f"{conf[a]['ci'][1]:.3f}]" for a in ARMS)  # type: ignore[index]
                     + f"; shipped / empty {ratio[0]:.3f} [{ratio[1]:.3f}, {ratio[2]:.3f}]; "
                       f"wins {wins}, ties {len(by['shipped']) - wins - losses}, losses {losses}")
        for c, v in per_cls.items():
            lines.append(f"  {c} (n={v['n']}): " + ", ".join(f"{a} {v[a]:.3f}x" for a in ARMS))
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
