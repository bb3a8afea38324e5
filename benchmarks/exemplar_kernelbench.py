"""Write the offline exemplar coder's candidates for a KernelBench checkout and say what it covers.

    python benchmarks/exemplar_kernelbench.py KB_DIR --backend cuda --out DIR [--levels 1,2] [--max-variants N]

KB_DIR is a KernelBench checkout's `KernelBench` folder (the one holding level1/, level2/, ...). For every
problem the coder recognizes, writes up to N variants (the family default first, then the most combined
knob settings, which differ most from it) as DIR/<level>_<stem>/<backend>_exNN_<variant>.py, plus
DIR/pairs.json (the format `python -m htam_agent.evaluation batch --pairs` reads; task paths point into the
checkout, nothing is copied), DIR/manifest.jsonl (task, level, variant, knobs, file) and DIR/coverage.json.
Prints per level how many problems were covered and, grouped, why the others were refused.

`--subset-variants M --subset-every K` adds M more variants on every K-th covered problem: one default per
problem keeps a GPU batch short while part of the space is still measured.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter, defaultdict
from pathlib import Path


def _order(n: int) -> list[int]:
    """The default, then variants from the end of the curated list (combinations) interleaved with the start."""
    rest = list(range(1, n))
    out = [0]
    while rest:
        out.append(rest.pop())
        if rest:
            out.append(rest.pop(0))
    return out


def _reason(exc: Exception) -> str:
    msg = str(exc).split("is not supported: ", 1)[-1].split(". The offline exemplar coder")[0]
    msg = re.sub(r"\b(node|value) \w+", r"\1 _", msg)
    return msg[:100]


def _problems(kb: Path, levels: list[int]) -> list[tuple[int, Path]]:
    out = []
    for lv in levels:
        folder = kb / f"level{lv}"
        if not folder.is_dir():
            raise SystemExit(f"{folder}: no such folder (pass the checkout's KernelBench folder)")
        files = sorted(folder.glob("*.py"), key=lambda p: (int(p.name.split("_")[0]) if p.name[0].isdigit() else 0,
                                                            p.name))
        out += [(lv, p) for p in files if not p.name.startswith("_")]
    return out


def main(argv: list[str] | None = None) -> int:
    from htam_agent.backend_registry import BACKENDS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kb_dir", type=Path)
    ap.add_argument("--backend", default="cuda", choices=BACKENDS)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--levels", default="1,2")
    ap.add_argument("--max-variants", type=int, default=1, help="variants per covered problem (default 1)")
    ap.add_argument("--subset-variants", type=int, default=0, help="extra variants on a subset of problems")
    ap.add_argument("--subset-every", type=int, default=4, help="the subset: every K-th covered problem")
    ap.add_argument("--exclude-families", default="",
                    help="comma list of families to leave out (e.g. matmul: its SIMT fp32 tiles are slower than cuBLAS)")
    a = ap.parse_args(argv)

    from htam_agent.coder.base import UnsupportedTask
    from htam_agent.coder.exemplar.common import parse_header
    from htam_agent.coder.exemplar.enumerate import enumerate_candidates

    levels = [int(x) for x in a.levels.split(",") if x.strip()]
    excluded = {f.strip() for f in a.exclude_families.split(",") if f.strip()}
    a.out.mkdir(parents=True, exist_ok=True)
    manifest, pairs = [], []
    covered: dict[int, list[str]] = defaultdict(list)
    refused: dict[int, Counter[str]] = defaultdict(Counter)
    families: dict[int, Counter[str]] = defaultdict(Counter)
    totals: Counter[int] = Counter()
    t0 = time.time()
    n_cov = 0
    for lv, path in _problems(a.kb_dir, levels):
        totals[lv] += 1
        try:
            cands = enumerate_candidates(path.read_text(), a.backend, path.stem)
        except UnsupportedTask as exc:
            refused[lv][_reason(exc)] += 1
            continue
        except Exception as exc:  # a bug of the coder: count it, say what it was, keep going
            refused[lv][f"coder error {type(exc).__name__}: {str(exc)[:80]}"] += 1
            continue
        family = (parse_header(cands[0][2]) or ("?",))[0]
        if family in excluded:
            refused[lv][f"family {family} excluded (--exclude-families)"] += 1
            continue
        covered[lv].append(path.stem)
        families[lv][family] += 1
        take = a.max_variants + (a.subset_variants if n_cov % max(a.subset_every, 1) == 0 else 0)
        n_cov += 1
        folder = a.out / f"level{lv}_{path.stem}"
        folder.mkdir(exist_ok=True)
        for i in _order(len(cands))[:max(take, 1)]:
            vid, knobs, code = cands[i]
            file = folder / f"{a.backend}_ex{i:02d}_{vid}.py"
            file.write_text(code)
            manifest.append({"task": str(path.resolve()), "task_name": path.stem, "level": lv, "backend": a.backend,
                             "variant": vid, "index": i, "default": i == 0, "knobs": knobs, "family": family,
                             "space": len(cands), "file": str(file.resolve())})
            pairs.append({"task": str(path.resolve()), "candidate": str(file.resolve())})
    (a.out / "manifest.jsonl").write_text("".join(json.dumps(m, sort_keys=True) + "\n" for m in manifest))
    (a.out / "pairs.json").write_text(json.dumps(pairs, indent=1))
    coverage = {f"level{lv}": {"problems": totals[lv], "covered": len(covered[lv]), "families": dict(families[lv]),
                               "covered_problems": covered[lv], "refused": dict(refused[lv].most_common())}
                for lv in levels}
    (a.out / "coverage.json").write_text(json.dumps(coverage, indent=1))
    for lv in levels:
        print(f"level{lv}: {len(covered[lv])}/{totals[lv]} covered "
              f"({', '.join(f'{k} {v}' for k, v in families[lv].most_common())}); "
              f"{sum(refused[lv].values())} refused")
        for why, n in refused[lv].most_common():
            print(f"    {n:3d}  {why}")
    total_cov = sum(len(v) for v in covered.values())
    print(f"total: {total_cov}/{sum(totals.values())} problems, {len(pairs)} candidates "
          f"({a.backend}) written to {a.out} in {time.time() - t0:.0f} s")
    print(f"evaluate: python -m htam_agent.evaluation batch --pairs {a.out / 'pairs.json'} --out verdicts.jsonl")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
