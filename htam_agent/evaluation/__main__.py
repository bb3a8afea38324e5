"""`python -m htam_agent.evaluation`: the evaluator alone, with torch, numpy and the standard library only.

    python -m htam_agent.evaluation eval TASK.py CANDIDATE.py [--backend cuda] [--json]
    python -m htam_agent.evaluation batch --pairs PAIRS.json --out verdicts.jsonl [--backend cuda]
    python -m htam_agent.evaluation batch --tasks DIR --candidates DIR --out verdicts.jsonl

`batch` is how GPU verdicts are made on a bare GPU host: compile everything in parallel, verify and time one
candidate at a time, write one verdict per line; `htam verdicts import verdicts.jsonl` brings them home.
Candidates for `--candidates DIR` are found as DIR/<task stem>/<backend>_*.py (the bundled layout).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .backends import BACKEND_NAMES, detect_backend
from .report import format_verdict
from .runner import Candidate, EvalOptions, Evaluator
from .store import VerdictStore
from .tasks import TaskError, task_paths


def _options(args: argparse.Namespace, backend: str) -> EvalOptions:
    return EvalOptions(
        backend=backend, size=args.size, alt_size=None if args.no_alt else "alt", trials=args.trials,
        tier=args.tier,
        timing=not args.no_timing, baselines=tuple(b for b in args.baselines.split(",") if b),
        compile_timeout_s=args.compile_timeout, run_timeout_s=args.run_timeout, threads=args.threads,
    )


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=BACKEND_NAMES, help="default: detected from the candidate source")
    p.add_argument("--size", choices=("default", "small", "alt"), help="default: small on cpp, else default")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--tier", choices=("default", "thorough", "bare"), default="default",
                   help="checks: default (the agent's), thorough (slower, more trials), bare (no anti-cheat; "
                        "for measuring their cost)")
    p.add_argument("--no-alt", action="store_true", help="skip the second-shape check")
    p.add_argument("--no-timing", action="store_true")
    p.add_argument("--baselines", default="eager,compile", help="comma list of eager,compile (or empty)")
    p.add_argument("--compile-timeout", type=float, default=600.0)
    p.add_argument("--run-timeout", type=float, default=180.0)
    p.add_argument("--threads", type=int, help="CPU threads for the cpp backend (default: all cores)")
    p.add_argument("--store", help="verdict store folder (default: HTAM_VERDICT_DIR or ~/.cache/htam-agent)")
    p.add_argument("--no-store", action="store_true", help="neither read nor write the verdict store")


def cmd_eval(args: argparse.Namespace) -> int:
    source = Path(args.candidate).read_text()
    backend = args.backend or detect_backend(source)
    if backend is None:
        print(f"{args.candidate}: cannot tell the backend from the source; pass --backend", file=sys.stderr)
        return 2
    store = None if args.no_store else VerdictStore(args.store)
    ev = Evaluator(_options(args, backend), store)
    verdict = ev.evaluate(Candidate(task_path=args.task, source=source), use_store=not args.no_store)
    print(json.dumps(verdict, indent=1, default=str) if args.json else format_verdict(verdict))
    return 0 if verdict["accepted"] else 1


def _pairs(args: argparse.Namespace) -> list[tuple[str, str]]:
    if args.pairs:
        data = json.loads(Path(args.pairs).read_text())
        return [(d["task"], d["candidate"]) for d in data]
    pairs = []
    for task in task_paths(args.tasks):
        folder = Path(args.candidates) / task.stem
        pattern = f"{args.backend}_*.py" if args.backend else "*.py"
        pairs += [(str(task), str(c)) for c in sorted(folder.glob(pattern))]
    return pairs


def cmd_batch(args: argparse.Namespace) -> int:
    pairs = _pairs(args)
    if not pairs:
        print("no (task, candidate) pairs found", file=sys.stderr)
        return 2
    by_backend: dict[str, list[Candidate]] = {}
    for task, cand in pairs:
        src = Path(cand).read_text()
        backend = args.backend or detect_backend(src) or "cuda"
        by_backend.setdefault(backend, []).append(Candidate(task_path=task, source=src, name=Path(task).stem))
        by_backend[backend][-1].origin = cand  # type: ignore[attr-defined]
    store = None if args.no_store else VerdictStore(args.store)
    t0 = time.time()
    out = open(args.out, "w") if args.out else None
    n_ok = 0
    for backend, cands in by_backend.items():
        ev = Evaluator(_options(args, backend), store)

        def progress(phase: str, i: int, n: int, v: dict | None, backend: str = backend,
                     cands: list[Candidate] = cands) -> None:
            nonlocal n_ok
            print(f"[{time.time() - t0:7.1f}s] {backend} {phase} {i}/{n}: {(v or {}).get('reason', '')[:150]}",
                  flush=True)
            if phase == "evaluate" and v is not None:
                v["candidate_path"] = getattr(cands[i - 1], "origin", "")
                n_ok += bool(v["accepted"])
                if out:  # written as it comes: a batch cut short keeps what it finished
                    out.write(json.dumps(v, default=str) + "\n")
                    out.flush()

        ev.evaluate_batch(cands, parallel_compile=args.jobs, progress=progress)
        if out:
            for base in ev._baselines.values():
                out.write(json.dumps(base, default=str) + "\n")
    if out:
        out.close()
    print(f"{n_ok}/{len(pairs)} accepted in {time.time() - t0:.1f} s" + (f"; verdicts in {args.out}" if args.out else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m htam_agent.evaluation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("eval", help="evaluate one candidate file against one task file")
    p.add_argument("task")
    p.add_argument("candidate")
    p.add_argument("--json", action="store_true")
    _add_common(p)
    p.set_defaults(fn=cmd_eval)
    p = sub.add_parser("batch", help="evaluate many candidates: parallel compile, then verify and time")
    p.add_argument("--pairs", help="JSON list of {task, candidate} paths")
    p.add_argument("--tasks", help="task file or folder (with --candidates)")
    p.add_argument("--candidates", help="folder of <task stem>/<backend>_*.py candidates")
    p.add_argument("--out", help="write verdicts here, one JSON per line")
    p.add_argument("--jobs", type=int, help="parallel compiles (default: all cores)")
    _add_common(p)
    p.set_defaults(fn=cmd_batch)
    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except TaskError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
