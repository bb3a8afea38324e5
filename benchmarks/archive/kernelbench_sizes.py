"""Every KernelBench problem at every size: load, derive 'small'/'alt', run the reference there.

    python benchmarks/archive/kernelbench_sizes.py /path/to/KernelBench                  # levels 1-3, all 250 files
    python benchmarks/archive/kernelbench_sizes.py /path/to/KernelBench --levels 1 --only ReLU
    python benchmarks/archive/kernelbench_sizes.py KB --out benchmarks/results/kernelbench_sizes.jsonl

Per file: load it as the evaluator does (`load_task`, default size), run the reference forward on the meta
device at the default size, derive the sizes afresh (`sizes.derive_sizes`, no cache), then load it at 'small'
and at 'alt' through `load_task` and time a real eager CPU forward there (`sizes.time_forward`: the fastest of
`--reps` by wall clock with 2 threads, and by one thread's CPU time, which a loaded machine does not inflate). Prints one line per file, then per level how many
loaded, derived and ran, the small forward times (median, max), the derivation times, and every failure with
its reason. `--out` writes one JSON object per file (the derivation report included) for later study, e.g.
the cost model's estimate against the measured time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch

from htam_agent.evaluation.tasks import load_task, task_paths
from htam_agent.evaluation.tasks import sizes as sizes_mod


def _err(exc: BaseException) -> str:
    return " ".join(traceback.format_exception_only(type(exc), exc)[-1].split())[:300]


def meta_forward(task) -> str:
    """The reference at its default size on the meta device; a model whose constructor meta cannot run
    (`.item()` in __init__) is built on the CPU and moved there, as the derivation does."""
    with torch.no_grad():
        try:
            with torch.device("meta"):
                model = task.model_cls(*task.get_init_inputs())
            how = "ok"
        except (NotImplementedError, RuntimeError):
            model = task.model_cls(*task.get_init_inputs()).to("meta")
            how = "ok (built on the CPU)"
        with torch.device("meta"):
            model(*task.get_inputs())
    return how


def cpu_forward_ms(task, reps: int) -> tuple[float, float]:
    """(wall ms with 2 threads, CPU ms of one thread), fastest of `reps` each (see sizes.time_forward)."""
    torch.manual_seed(0)
    model = task.model_cls(*task.get_init_inputs())
    return sizes_mod.time_forward(model, task.get_inputs(), repeats=reps, max_s=3.0)


def run_file(path: Path, reps: int) -> dict:
    rec: dict = {"file": f"{path.parent.name}/{path.name}", "level": path.parent.name}
    try:
        task = load_task(path)
        rec["loaded"] = True
    except Exception as exc:
        rec.update(loaded=False, failure=f"load: {_err(exc)}")
        return rec
    try:
        rec["default_meta"] = meta_forward(task)
    except Exception as exc:  # not a failure of the file: the derivation falls back to the CPU
        rec["default_meta"] = _err(exc)
    t0 = time.perf_counter()
    try:
        report = sizes_mod.derive_sizes(task.source, path, use_cache=False)
    except Exception as exc:
        rec.update(derived=False, failure=f"derive: {_err(exc)}")
        return rec
    rec["derive_s"] = round(time.perf_counter() - t0, 2)
    rec["report"] = report
    rec["derived"] = report["small"] is not None and report["alt"] is not None
    if not rec["derived"]:
        rec["failure"] = "derive: " + "; ".join(v for v in report["problems"].values() if v)
    for size in ("small", "alt"):
        if report[size] is None:
            continue
        try:
            t = load_task(path, size=size)
            rec[f"{size}_inputs"] = [f"{tuple(x.shape)}" for x in t.get_inputs() if isinstance(x, torch.Tensor)]
            wall, cpu = cpu_forward_ms(t, reps)
            rec[f"{size}_ms"], rec[f"{size}_cpu1_ms"] = round(wall, 3), round(cpu, 3)
        except Exception as exc:
            rec[f"{size}_error"] = _err(exc)
            rec.setdefault("failure", f"{size} forward on the CPU: {_err(exc)}")
    rec["ran"] = all(f"{s}_ms" in rec for s in ("small", "alt")) and rec["default_meta"].startswith("ok")
    return rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernelbench", type=Path, help="a KernelBench checkout (the folder holding level1, ...)")
    ap.add_argument("--levels", default="1,2,3")
    ap.add_argument("--only", default="", help="only files whose name contains one of these (comma-separated)")
    ap.add_argument("--reps", type=int, default=20, help="timed forwards per size (fewer past 3 s of them)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="JSONL, one object per file")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    out = args.out.open("w") if args.out else None
    by_level: dict[str, list[dict]] = {}
    t_all = time.perf_counter()
    for level in (f"level{n.strip()}" for n in args.levels.split(",")):
        for path in task_paths(args.kernelbench / level):
            if args.only and not any(o and o in path.name for o in args.only.split(",")):
                continue
            rec = run_file(path, args.reps)
            by_level.setdefault(level, []).append(rec)
            small = rec.get("report", {}).get("small") or {}
            print(f"{rec['file']:<75} derive {rec.get('derive_s', '-'):>6}s  small {rec.get('small_ms', '-'):>8} | "
                  f"{rec.get('small_cpu1_ms', '-'):>8} ms (est {small.get('est_ms', '-')})  alt {rec.get('alt_ms', '-'):>8} | "
                  f"{rec.get('alt_cpu1_ms', '-'):>8} ms  "
                  f"{small.get('inputs', '')}  {rec.get('failure', '')}", flush=True)
            if out:
                out.write(json.dumps(rec) + "\n")
                out.flush()
    print(f"\nwall {time.perf_counter() - t_all:.0f} s, torch {torch.__version__}, {args.threads} threads")
    print("small/alt ms: the fastest forward by wall clock with 2 threads | by one thread's CPU time")
    print(f"{'level':<8} {'files':>5} {'loaded':>6} {'derived':>7} {'ran':>4} {'small ms median':>17} "
          f"{'small ms max':>17} {'alt ms max':>17} {'over 50 ms':>10} {'derive s median':>15} {'derive s max':>12}")

    def fast(r: dict, size: str) -> float:
        return min(r.get(f"{size}_ms", 0.0), r.get(f"{size}_cpu1_ms", 0.0))

    def stats(xs: list[float], f) -> str:
        return f"{f(xs):.2f}" if xs else "-"

    failures = []
    for level, recs in by_level.items():
        sm = [r["small_ms"] for r in recs if "small_ms" in r]
        s1 = [r["small_cpu1_ms"] for r in recs if "small_cpu1_ms" in r]
        am = [r["alt_ms"] for r in recs if "alt_ms" in r]
        a1 = [r["alt_cpu1_ms"] for r in recs if "alt_cpu1_ms" in r]
        ds = [r["derive_s"] for r in recs if "derive_s" in r]
        over = sum(1 for r in recs if max(fast(r, "small"), fast(r, "alt")) > sizes_mod.TARGET_MS)
        print(f"{level:<8} {len(recs):>5} {sum(bool(r.get('loaded')) for r in recs):>6} "
              f"{sum(bool(r.get('derived')) for r in recs):>7} {sum(bool(r.get('ran')) for r in recs):>4} "
              f"{stats(sm, statistics.median) + ' | ' + stats(s1, statistics.median):>17} "
              f"{stats(sm, max) + ' | ' + stats(s1, max):>17} {stats(am, max) + ' | ' + stats(a1, max):>17} "
              f"{over:>10} {stats(ds, statistics.median):>15} {stats(ds, max):>12}")
        failures += [r for r in recs if r.get("failure") or not str(r.get("default_meta", "ok")).startswith("ok")]
    print("\nfailures and notes:" if failures else "\nno failures")
    for r in failures:
        note = r.get("failure") or f"default size not runnable on meta: {r.get('default_meta')}"
        print(f"  {r['file']}: {note}")
    slow = [r for recs in by_level.values() for r in recs
            if max(fast(r, "small"), fast(r, "alt")) > sizes_mod.TARGET_MS]
    if slow:
        print(f"\nover the {sizes_mod.TARGET_MS:.0f} ms target by both clocks (small, alt: wall 2 threads | "
              "CPU 1 thread, ms):")
        for r in slow:
            print(f"  {r['file']}: {r.get('small_ms')} | {r.get('small_cpu1_ms')}, "
                  f"{r.get('alt_ms')} | {r.get('alt_cpu1_ms')}  {r['report']['small']['inputs']}")
    return 0 if all(r.get("ran") for recs in by_level.values() for r in recs) else 1


if __name__ == "__main__":
    sys.exit(main())
