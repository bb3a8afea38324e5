"""Transfer across KernelBench, measured (issue 23): the memory is trained on one half of the problems, in a fixed
order, and tested on the other half; HTAM, flat memory, no memory and random directions at equal budget, with K
candidates per step.

    HTAM_DEVICE_NAME="NVIDIA H200" python benchmarks/bench_transfer.py KB_DIR \
        --verdicts benchmarks/results/h200_kb_exemplar_cuda_verdicts.jsonl --out DIR [--ks 1,2,3] [--seeds 0,1,2]

KB_DIR is a KernelBench checkout's `KernelBench` folder. The problems are those the verdict file covers (the
bench replays stored H200 verdicts of the offline exemplar coder's candidates; a candidate without one would be
"not evaluated" and is counted, see the summary). The split is fixed: problems sorted by operator class (the
analyze node's) and id, alternately train and test within each class, so every class with two or more problems
is on both sides; a class with one problem is trained on only.

For each K: htam, flat memory and random directions each learn on the train half (one lane per method and
seed, tasks in id order, K candidates per step, budget/K steps, `max_evaluations=budget`), then run the test half
on that memory with learning off, so every test problem sees exactly what the train half taught (no test
problem learns from another). No memory (`refine`) runs the test half only. Prints per method and K the
geomean speedup over eager on the test half (mean over seeds of each problem's best, then geomean), per class,
and the ratios the issue's budgets name; writes DIR/summary.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections import defaultdict
from pathlib import Path

BASES = {  # method name -> RunContext switches (the bench's own methods, with K candidates per step)
    "htam": dict(memory_mode="htam", direction_policy="htam"),
    "flat-memory": dict(memory_mode="flat", direction_policy="htam"),
    "refine": dict(memory_mode="none", direction_policy="htam", learn=False),
    "random-direction": dict(memory_mode="htam", direction_policy="random"),
}


def _register(k: int, learn: bool) -> list[str]:
    """Put the K-candidate methods in the bench's table, learning on or off; the same names either way, so the
    test phase runs in the lanes (memory folders) the train phase filled."""
    from htam_agent.bench import methods as m

    names = []
    for base, switches in BASES.items():
        name = f"{base}-k{k}"

        def configure(ctx, budget, switches=switches):  # noqa: ANN001, ANN202 - a Method.configure
            sw = dict(use_strategies=True, use_transitions=True, **switches)
            if not learn:
                sw["learn"] = False
            return ctx.with_(steps=max(1, budget // k), candidates=k, max_evaluations=budget, **sw)

        m.METHODS[name] = m.Method(name, f"{base} with {k} candidates per step, budget/{k} steps", configure)
        names.append(name)
    return names


def split(tasks: list, classes: dict[str, str]) -> tuple[list, list]:
    by_class: dict[str, list] = defaultdict(list)
    for t in sorted(tasks, key=lambda t: (classes[t.id], t.id)):
        by_class[classes[t.id]].append(t)
    train, test = [], []
    for members in by_class.values():
        for i, t in enumerate(members):
            (train if i % 2 == 0 else test).append(t)
    return sorted(train, key=lambda t: t.id), sorted(test, key=lambda t: t.id)


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kb", help="a KernelBench checkout's KernelBench folder")
    ap.add_argument("--verdicts", required=True, help="stored verdicts (JSONL) to replay")
    ap.add_argument("--out", required=True)
    ap.add_argument("--ks", default="1,2,3")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--det-seeds", default=None,
                    help="seeds for the deterministic methods (htam, flat memory, no memory: with the offline coder "
                         "the seed only breaks exact ties); default: --seeds. Random directions always run --seeds")
    ap.add_argument("--budget", type=int, default=6)
    ap.add_argument("--levels", default="1,2")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HTAM_VERDICT_DIR", str(out / "verdicts"))
    os.environ.setdefault("HTAM_RUNS_DIR", str(out / "runs"))
    if not os.environ.get("HTAM_DEVICE_NAME"):
        sys.exit("set HTAM_DEVICE_NAME to the device the verdicts were made on (e.g. 'NVIDIA H200')")

    from htam_agent.bench.driver import BenchConfig, plan, run_bench
    from htam_agent.bench.suite import resolve_suite
    from htam_agent.context import RunContext
    from htam_agent.evaluation.parent.store import VerdictStore
    from htam_agent.nodes.analyze import classify, reference_ops

    VerdictStore(os.environ["HTAM_VERDICT_DIR"]).import_jsonl(args.verdicts)
    covered = {json.loads(ln)["task"] for ln in Path(args.verdicts).read_text().splitlines() if ln.strip()}
    tasks = [t for t in resolve_suite(args.kb, args.levels, None, None) if Path(t.path).stem in covered]
    classes = {t.id: classify(reference_ops(Path(t.path).read_text(), t.path)) for t in tasks}
    train, test = split(tasks, classes)
    seeds = tuple(int(s) for s in args.seeds.split(","))
    ks = [int(k) for k in args.ks.split(",")]
    det_seeds = tuple(int(x) for x in (args.det_seeds or args.seeds).split(","))
    base = RunContext.from_env(backend="cuda", coder="exemplar", max_repairs=0, evaluation="replay",
                               shipped_memory=False)  # lanes start from what they learn here
    print(f"{len(tasks)} problems: train {len(train)}, test {len(test)}")
    print("train:", ", ".join(t.id for t in train))
    print("test: ", ", ".join(t.id for t in test))

    summary: dict[str, object] = {"train": [t.id for t in train], "test": [t.id for t in test],
                                  "classes": classes, "seeds": list(seeds), "det_seeds": list(det_seeds),
                                  "budget": args.budget, "results": {}}
    cfg = dict(suite=args.kb, bench_dir=str(out), base=base, budget=args.budget, workers=1)
    for k in ks:
        names = _register(k, learn=True)
        learners = [n for n in names if not n.startswith("refine")]

        def units(methods: list[str], tasks: list, cfg: dict = cfg) -> list:
            det = [m for m in methods if not m.startswith("random")]
            rnd = [m for m in methods if m.startswith("random")]
            got = plan(BenchConfig(methods=det, seeds=det_seeds, **cfg), tasks) if det else []
            return got + (plan(BenchConfig(methods=rnd, seeds=seeds, **cfg), tasks) if rnd else [])

        run_bench(BenchConfig(methods=learners, seeds=seeds, **cfg), units=units(learners, train), progress=False)
        _register(k, learn=False)
        outcome = run_bench(BenchConfig(methods=names, seeds=seeds, **cfg), units=units(names, test),
                            progress=False)
        per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        not_evaluated = defaultdict(int)
        for rec in outcome.records:
            s = rec.get("speedup_vs_eager")
            per[rec["method"]][rec["task"]].append(s if s and s > 0 else 1.0)  # nothing accepted: eager stays
            for st in (rec.get("result") or {}).get("steps") or []:
                not_evaluated[rec["method"]] += st.get("status") == "not_evaluated"
        for method, by_task in per.items():
            means = {t: sum(v) / len(v) for t, v in by_task.items()}
            cls: dict[str, list[float]] = defaultdict(list)
            for t, v in means.items():
                cls[classes.get(t, "?")].append(v)
            summary["results"][method] = {  # type: ignore[index]
                "geomean": _geomean(list(means.values())), "per_task": means,
                "per_class": {c: _geomean(v) for c, v in sorted(cls.items())},
                "runs": sum(len(v) for v in by_task.values()), "not_evaluated_steps": not_evaluated[method]}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    res = summary["results"]
    print("\n| K | htam | flat memory | no memory | random direction | htam / no memory | htam / flat |")
    print("|---|---|---|---|---|---|---|")
    for k in ks:
        g = {b: res[f"{b}-k{k}"]["geomean"] for b in BASES}  # type: ignore[index]
        print(f"| {k} | {g['htam']:.3f}x | {g['flat-memory']:.3f}x | {g['refine']:.3f}x | "
              f"{g['random-direction']:.3f}x | {g['htam'] / g['refine']:.3f} | {g['htam'] / g['flat-memory']:.3f} |")
    for k in ks:
        print(f"\nK={k}, per class (geomean over eager; htam vs no memory, vs flat):")
        h = res[f"htam-k{k}"]["per_class"]  # type: ignore[index]
        for c in h:
            n, f = res[f"refine-k{k}"]["per_class"][c], res[f"flat-memory-k{k}"]["per_class"][c]  # type: ignore[index]
            r = res[f"random-direction-k{k}"]["per_class"][c]  # type: ignore[index]
            print(f"  {c:<14} htam {h[c]:.3f}x  flat {f:.3f}x  none {n:.3f}x  random {r:.3f}x  "
                  f"({h[c] / n:.3f}, {h[c] / f:.3f})")


if __name__ == "__main__":
    main()
