"""The memory's held-out protocol (issue 35, docs/memory_protocol.md): 5-fold cross-validation over the problems of
a verdict table, stratified by operator class, every evaluation replayed from the table.

    python benchmarks/bench_memory_cv.py TABLE --kb KB/KernelBench --out DIR [--draw-folds] [--workers 2]

TABLE is a verdict table (htam_agent/bench/table.py: .jsonl or .jsonl.gz); KB the folder holding the problems'
files as KB/<problem>.py (a KernelBench checkout's KernelBench folder for "level1/19_ReLU"). The folds are read
from benchmarks/folds/<table name>.folds.json (--folds to name another); --draw-folds draws them once, from the
protocol's fixed seed, when that file does not exist yet: commit it. Resumable: run the same command again after
a kill and it continues (finished test runs and trained lanes are kept). Prints each run, then the tables; writes
DIR/results.jsonl, DIR/summary.json, DIR/report.md and DIR/memory_cv.png.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table")
    ap.add_argument("--kb", required=True, help="folder with the problems' files, KB/<problem>.py")
    ap.add_argument("--out", required=True)
    ap.add_argument("--folds", default=None, help="folds file (default benchmarks/folds/<table>.folds.json)")
    ap.add_argument("--draw-folds", action="store_true", help="draw the folds once if the folds file is missing")
    ap.add_argument("--workers", type=int, default=2, help="processes (each takes a fold x lane unit)")
    ap.add_argument("--methods", default=None, help="a subset of the methods (default: all)")
    ap.add_argument("--only-folds", default=None, help="a subset of folds, e.g. 0 (a smoke run; not the protocol)")
    ap.add_argument("--keep-runs", action="store_true", help="keep every run's artifact folder (large)")
    ap.add_argument("--apart", default=None, metavar="PREFIX",
                    help="also report the problems whose id starts with PREFIX on their own (e.g. level2/: the "
                         "problems added after the last policy change); folds and lanes stay the whole table's")
    args = ap.parse_args(argv)

    from htam_agent.bench import memory_cv as cv

    methods = tuple(m.strip() for m in args.methods.split(",")) if args.methods else tuple(cv.METHODS)
    unknown = [m for m in methods if m not in cv.METHODS]
    if unknown:
        sys.exit(f"unknown method(s) {unknown}; known: {', '.join(cv.METHODS)}")
    cfg = cv.CVConfig(table=str(Path(args.table).resolve()), out=str(Path(args.out).resolve()),
                      kb=str(Path(args.kb).resolve()),
                      folds_path=str(args.folds or cv.default_folds_path(args.table)), draw_folds=args.draw_folds,
                      methods=methods, workers=args.workers, keep_runs=args.keep_runs,
                      folds=tuple(int(f) for f in args.only_folds.split(",")) if args.only_folds else None)
    try:
        summary = cv.run_cv(cfg)
    except cv.ProtocolError as exc:
        sys.exit(str(exc))
    lines = [f"# Memory cross-validation: {Path(args.table).name}", "",
             f"{summary['problems']} problems, 5 folds ({cfg.folds_path}), budgets {list(cfg.budgets)}, "
             f"K {list(cfg.ks)}, methods {', '.join(methods)}; {summary['wall_s']} s",
             *cv.report_lines(summary)]
    if args.apart:
        from htam_agent.bench.table import load_table

        table = load_table(cfg.table)
        folds = cv.load_or_draw_folds(table, cfg.folds_path, draw=False)
        apart = cv.summarize(table, folds, cv.Results(Path(cfg.out)).records(), cfg,
                             only=lambda p: p.startswith(args.apart))
        slug = args.apart.strip("/").replace("/", "_") or "apart"
        (Path(cfg.out) / f"summary.{slug}.json").write_text(json.dumps(apart, indent=1, default=str) + "\n")
        lines += ["", f"## Apart: the {apart['problems']} problems whose id starts with {args.apart!r}",
                  "(the same runs: folds and trained lanes are the whole table's)", *cv.report_lines(apart)]
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(cfg.out)
    (out / "report.md").write_text(text)
    png = cv.plot(summary, out / "memory_cv.png")
    print(f"wrote {out / 'summary.json'}, {out / 'report.md'}, {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
