"""How large the offline coder's space is on a KernelBench checkout, and what a verdict table of it costs in builds.

    python benchmarks/exemplar_space.py KB_DIR [--backend cpp] [--levels 1,2]
    python benchmarks/exemplar_space.py KB_DIR --digest [--levels 1,2,3,4] > digest.txt

KB_DIR is a KernelBench checkout's `KernelBench` folder. Prints the problems covered, the distribution of
variants per problem, the problems with fewer than 16 variants (issue 35's floor), and the distinct builds the
variants need (variants that differ only in launch knobs share one: coder/exemplar/cpp_launch.py).

`--digest` prints instead one line per (problem, backend, variant) with the sha256 of the code the coder writes,
for every backend, and per problem the recognised family and description (or the refusal): a
refactoring of the coder that must not change what it writes shows an empty `diff` of two digests (the verdict
table is keyed by each variant's code hash).
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
    from htam_agent.backend_registry import BACKENDS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kb_dir", type=Path)
    ap.add_argument("--backend", default="cpp", choices=BACKENDS)
    ap.add_argument("--levels", default="1,2")
    ap.add_argument("--digest", action="store_true", help="sha256 of every variant's code, all backends")
    args = ap.parse_args(argv)
    if args.digest:
        return digest(args.kb_dir, [int(x) for x in args.levels.split(",") if x])

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


def digest(kb_dir: Path, levels: list[int]) -> int:
    """One line per variant (problem, backend, variant id, sha256 of the code) and per problem its pattern."""
    import hashlib

    from htam_agent.backend_registry import BACKENDS
    from htam_agent.coder.base import UnsupportedTask
    from htam_agent.coder.exemplar.enumerate import variants
    from htam_agent.coder.exemplar.patterns import recognize

    def sha(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    def refusal(exc: Exception) -> str:  # it may quote an object's address, which changes from run to run
        return sha(re.sub(r" at 0x[0-9a-f]+", "", str(exc)))

    for lv in levels:
        folder = kb_dir / f"level{lv}"
        if not folder.is_dir():
            raise SystemExit(f"{folder}: no such folder (pass the checkout's KernelBench folder)")
        for f in sorted(folder.glob("*.py")):
            problem, source = f"level{lv}/{f.stem}", f.read_text()
            try:
                pat = recognize(source, f.stem)
            except UnsupportedTask as exc:
                print(f"{problem} pattern unsupported {refusal(exc)}", flush=True)
                continue
            print(f"{problem} pattern {pat.family} {sha(pat.description)}", flush=True)
            for backend in sorted(BACKENDS):
                try:
                    cands = variants(pat, backend)
                except UnsupportedTask as exc:
                    print(f"{problem} {backend} unsupported {refusal(exc)}", flush=True)
                    continue
                for vid, _, code in cands:
                    print(f"{problem} {backend} {vid} {sha(code)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
