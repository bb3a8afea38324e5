"""`htam kernelbench-checks` (also `python benchmarks/kernelbench_checks.py`): the KernelBench-targeted cheats and
honest candidates through the evaluator, each verdict checked against its file's header.

argparse, not typer, and the standard library only: the command runs on a GPU host that has torch and numpy
beside our package and nothing else, so `htam` hands its arguments here unchanged. The checks themselves
(headers, the batch, the judging) are `htam_agent.bench.kernelbench_checks`; its docstring has the header format.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from htam_agent.bench import kernelbench_checks as kc


def checkout_candidates_dir() -> Path | None:
    """tests/cheats/kernelbench of the checkout this package runs from; None in an installed package (then
    --candidates-dir is required)."""
    folder = kc.PACKAGE_ROOT / "tests" / "cheats" / "kernelbench"
    return folder if folder.is_dir() else None


def parser(candidates_dir: Path | None = None, prog: str = "htam kernelbench-checks") -> argparse.ArgumentParser:
    """The command's options; `candidates_dir` is --candidates-dir's default (required when None)."""
    ap = argparse.ArgumentParser(prog=prog, description=kc.__doc__.split("\n\n")[0],
                                 epilog="See htam_agent/bench/kernelbench_checks.py's docstring for the header format.")
    ap.add_argument("kb_dir", type=Path, help="KernelBench's folder of levels (level1/, ...) or the checkout above")
    ap.add_argument("--out", type=Path, required=True, help="folder for pairs.json, verdicts.jsonl, summary.json")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--only", help="keep candidates whose file or KernelBench problem contains this")
    ap.add_argument("--jobs", type=int, help="parallel compiles (passed to the batch)")
    ap.add_argument("--size", choices=("default", "small", "alt"), help="passed to the batch (default: the "
                    "evaluator's, KernelBench's own shapes on cuda)")
    ap.add_argument("--tier", choices=("default", "thorough"), help="passed to the batch")
    ap.add_argument("--baselines", default="eager", help="passed to the batch (default: eager only; "
                    "'eager,compile' adds a torch.compile build per problem, minutes each on level-1 files)")
    ap.add_argument("--candidates-dir", type=Path, default=candidates_dir, required=candidates_dir is None,
                    help="folder holding honest/ and cheats/ (default: the checkout's tests/cheats/kernelbench; its "
                    "fast/ holds the fast-form rewrites of honest/)")
    ap.add_argument("--dry-run", action="store_true", help="write pairs.json and print the plan; run nothing")
    ap.add_argument("--judge-only", action="store_true", help="judge OUTDIR/verdicts.jsonl as it is; run nothing")
    return ap


def main(argv: list[str] | None = None, candidates_dir: Path | None = None,
         prog: str = "htam kernelbench-checks") -> int:
    """Parse argv and run the checks; returns the exit status (1 on a mismatch or a failed batch, 2 on bad
    arguments or headers)."""
    return kc.run(parser(candidates_dir, prog).parse_args(argv))
