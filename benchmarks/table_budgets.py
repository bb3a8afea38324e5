"""The verdict table against issue 35's budgets for it: at least 100 problems, at least 16 variants each, and on
most problems the best variant at least 1.2x the median one (so that choosing a variant matters).

    python benchmarks/table_budgets.py benchmarks/tables/cpp_kb_small.jsonl [--json]

Counts the latest record of each (problem, variant). The best / median ratio is over a problem's accepted
variants (speedup over eager); a problem with fewer than two accepted variants has none. Also printed: how many
records know their ratio to +-5% (ratio_hi / ratio_lo <= 1.10), and the same per operator class.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MIN_PROBLEMS, MIN_VARIANTS, MIN_SPREAD = 100, 16, 1.2


def budgets(path: Path) -> dict:
    from htam_agent.bench.table import load_table

    table = load_table(path)
    per_class: dict[str, dict[str, int]] = defaultdict(lambda: {"problems": 0, "spread": 0})
    n_var, spreads, tight, accepted, records = [], {}, 0, 0, 0
    for p in table.problems:
        recs = table.variants(p)
        records += len(recs)
        n_var.append(len(recs))
        ok = sorted(r.speedup_eager for r in recs if r.accepted and r.speedup_eager)
        accepted += sum(1 for r in recs if r.accepted)
        tight += sum(1 for r in recs if r.accepted and r.ratio_lo and r.ratio_hi and r.ratio_hi / r.ratio_lo <= 1.10)
        cls = recs[0].op_class
        per_class[cls]["problems"] += 1
        if len(ok) >= 2:
            spreads[p] = ok[-1] / statistics.median(ok)
            per_class[cls]["spread"] += spreads[p] >= MIN_SPREAD
    wide = sum(1 for s in spreads.values() if s >= MIN_SPREAD)
    return {
        "table": str(path), "problems": len(table.problems), "records": records, "accepted": accepted,
        "within_5pct": tight, "variants_min": min(n_var, default=0),
        "variants_median": statistics.median(n_var) if n_var else 0,
        "problems_with_16_variants": sum(1 for n in n_var if n >= MIN_VARIANTS),
        "best_over_median_ge_1.2": wide, "problems_with_a_spread": len(spreads),
        "best_over_median_median": round(statistics.median(spreads.values()), 3) if spreads else None,
        "per_class": dict(per_class),
        "met": {"problems": len(table.problems) >= MIN_PROBLEMS,
                "variants": all(n >= MIN_VARIANTS for n in n_var),
                "choosing_matters": wide > len(table.problems) / 2},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", type=Path)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    from htam_agent.bench.table import TableError

    try:
        b = budgets(args.table)
    except TableError as exc:
        sys.exit(str(exc))
    if args.json:
        print(json.dumps(b, indent=1))
        return 0
    n = b["problems"]
    print(f"{b['table']}: {n} problems (budget >= {MIN_PROBLEMS}: {'met' if b['met']['problems'] else 'not met'}), "
          f"{b['records']} records, {b['accepted']} accepted, {b['within_5pct']} of them known to +-5%")
    print(f"variants per problem: min {b['variants_min']}, median {b['variants_median']}; "
          f"{b['problems_with_16_variants']} of {n} problems have >= {MIN_VARIANTS} "
          f"({'met' if b['met']['variants'] else 'not met'})")
    print(f"best accepted variant >= {MIN_SPREAD}x the median one: {b['best_over_median_ge_1.2']} of {n} problems "
          f"(median ratio {b['best_over_median_median']}; {'met' if b['met']['choosing_matters'] else 'not met'})")
    for cls, c in sorted(b["per_class"].items()):
        print(f"  {cls:14s} {c['problems']:3d} problems, {c['spread']:3d} with best >= {MIN_SPREAD}x median")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
