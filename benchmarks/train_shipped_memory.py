"""Train the memory that ships with htam-agent from a verdict table (issue 35, part 5).

    python benchmarks/train_shipped_memory.py TABLE --kb KB/KernelBench [--out FILE] [--work DIR]

Runs the held-out protocol's htam lane (htam_agent/bench/memory_cv.train_lane: each problem in id order at 6
evaluations, K=1, learning on, every evaluation replayed from TABLE) over every problem of the table, and writes
what it learned (transition events and learned strategy cards, with their operator classes and backend) under
shipped names to FILE, by default htam_agent/memory/shipped/<backend>.json.gz (package data: a fresh install
loads it, see htam_agent/memory/shipped.py). The file keeps its provenance: the table's name, commit, date and
machine, this command, the commit it ran at, and the counts of problems and events. Takes about a second per
problem plus ~20 s once (the embedding model), on one core.

The cpp table, once benchmarks/verdict_table.py has filled it:

    python benchmarks/train_shipped_memory.py benchmarks/tables/cpp_kb_small.jsonl --kb KB/KernelBench
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", type=Path)
    ap.add_argument("--kb", required=True, type=Path, help="folder with the problems' files, KB/<problem>.py")
    ap.add_argument("--out", type=Path, default=None,
                    help="the shipped file (default htam_agent/memory/shipped/<backend>.json.gz)")
    ap.add_argument("--work", type=Path, default=None, help="keep the trained lane and its runs here")
    args = ap.parse_args(argv)

    from htam_agent.bench.shipped_memory import train_shipped
    from htam_agent.bench.table import TableError, load_table

    try:
        backend = next(iter(load_table(args.table))).backend
    except (TableError, StopIteration) as exc:
        sys.exit(f"{args.table}: {exc or 'an empty table'}")
    out = args.out or ROOT / "htam_agent" / "memory" / "shipped" / f"{backend}.json.gz"
    command = shlex.join(["python", "benchmarks/train_shipped_memory.py",
                          *(sys.argv[1:] if argv is None else argv)])
    about = train_shipped(args.table, args.kb, out, command=command, work=args.work)
    t = about["trained"]
    print(f"wrote {out} ({out.stat().st_size:,} bytes): {about['events']} transitions and "
          f"{about['learned_strategies']} strategy cards from {t['problems']} problems of {about['table']} "
          f"({about['table_date']}); classes {about['op_classes']}; {t['not_evaluated']} candidate(s) the table "
          f"could not answer; {t['wall_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
