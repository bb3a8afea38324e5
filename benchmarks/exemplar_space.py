"""How large the offline coder's space is on a KernelBench checkout, and what a verdict table of it costs in builds.

    python benchmarks/exemplar_space.py KB_DIR [--backend cpp] [--levels 1,2]

KB_DIR is a KernelBench checkout's `KernelBench` folder. Prints the problems covered, the distribution of
variants per problem, the problems with fewer than 16 variants (issue 35's floor), and the distinct builds the
variants need (variants that differ only in launch knobs share one: coder/exemplar/cpp_launch.py).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kb_dir", type=Path)
    ap.add_argument("--backend", default="cpp", choices=("cpp", "cuda", "triton"))
    ap.add_argument("--levels", default="1,2")
    args = ap.parse_args(argv)

    from htam_agent.coder.base import UnsupportedTask
    from htam_agent.coder.exemplar import enumerate_candidates

    sizes: Counter[int] = Counter()
    small: list[str] = []
    builds = variants = covered = 0
    for lv in (int(x) for x in args.levels.split(",") if x):
        folder = args.kb_dir / f"level{lv}"
        if not folder.is_dir():
            raise SystemExit(f"{folder}: no such folder (pass the checkout's KernelBench folder)")
        for f in sorted(folder.glob("*.py")):
            try:
                cands = enumerate_candidates(f.read_text(), args.backend, f.stem)
            except UnsupportedTask:
                continue
            covered += 1
            sizes[len(cands)] += 1
            variants += len(cands)
            names = {m.group(1) for _, _, code in cands if (m := re.search(r'name="(\w+)"', code))}
            builds += len(names) or len(cands)
            if len(cands) < 16:
                small.append(f"level{lv}/{f.stem} ({len(cands)})")
    print(f"{args.backend}: {covered} problems covered, {variants} variants, {builds} distinct builds")
    print("variants per problem: " + ", ".join(f"{k}: {v} problems" for k, v in sorted(sizes.items())))
    print(f">= 16 variants: {sum(v for k, v in sizes.items() if k >= 16)} problems; fewer: {', '.join(small)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
