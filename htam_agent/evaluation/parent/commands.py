"""`python -m htam_agent.evaluation`: the evaluator alone, with torch, numpy and the standard library only.

    python -m htam_agent.evaluation eval TASK.py CANDIDATE.py [--backend cuda] [--json]
    python -m htam_agent.evaluation batch --pairs PAIRS.json --out verdicts.jsonl [--backend cuda]
    python -m htam_agent.evaluation batch --tasks DIR --candidates DIR --out verdicts.jsonl

`batch` is how GPU verdicts are made on a bare GPU host: compile everything in parallel, verify and time one
candidate at a time, write one verdict per line; `htam verdicts import verdicts.jsonl` brings them home.
`--tasks` takes a task file, a folder of them (a KernelBench level folder as it is) or a KernelBench checkout
(`--levels 1,2` picks its level folders). Candidates for `--candidates DIR` are found as
DIR/<task stem>/<backend>_*.py (the bundled layout; for a KernelBench level's task also DIR/<level>_<stem>/ and
DIR/<level>/<stem>/); the bundled suite's tasks default to its own candidates. On the cpp backend a task is
evaluated at its small size (SMALL_SIZES, or derived from its size globals when the file has none).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from htam_agent.backend_registry import spec

from ..backends import detect_backend
from ..common import gpu
from ..common.verdict import with_envelope
from ..tasks import TaskError, task_paths
from .candidate import Candidate
from .evaluator import Evaluator
from .options import add_arguments, eval_options, verdict_store
from .pool import start_early
from .readout import Readout


def cmd_eval(args: argparse.Namespace) -> int:
    source = Path(args.candidate).read_text()
    backend = args.backend or detect_backend(source)
    if backend is None:
        print(f"{args.candidate}: cannot tell the backend from the source; pass --backend", file=sys.stderr)
        return 2
    start_early()  # the checker's imports run beside this process's (the task's sizes and footprint)
    store = verdict_store(args)
    ev = Evaluator(eval_options(args, backend), store)
    verdict = ev.evaluate(Candidate.of(args.task, source), use_store=not args.no_store)
    print(json.dumps(verdict, indent=1, default=str) if args.json else Readout(verdict).text())
    return 0 if verdict["accepted"] else 1


class BatchError(ValueError):
    """Bad --pairs/--tasks/--candidates arguments; the message names the file or field and the fix."""


_LEVEL = re.compile(r"level\d+")


def _parse_levels(levels: str | None) -> list[str] | None:
    if not levels:
        return None
    out = []
    for part in levels.split(","):
        part = part.strip().removeprefix("level")
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise BatchError(f"--levels {levels!r}: use level numbers, e.g. --levels 1,2 or --levels 1-3")
        out += [f"level{n}" for n in range(int(lo), int(hi or lo) + 1)]
    return list(dict.fromkeys(out))


def _level_dirs(root: Path) -> dict[str, Path]:
    """A KernelBench checkout's level folders: ROOT/levelN or ROOT/KernelBench/levelN."""
    for base in (root, root / "KernelBench"):
        found = {p.name: p for p in base.glob("level*") if p.is_dir() and _LEVEL.fullmatch(p.name)}
        if found:
            return dict(sorted(found.items(), key=lambda kv: int(kv[0][5:])))
    return {}


def _task_files(path: str, levels: str | None = None) -> list[tuple[Path, str]]:
    """(task file, level or "") for --tasks: a file, a folder of task files (a KernelBench level folder as it
    is), or a KernelBench checkout (its level folders, those of --levels)."""
    root = Path(path).expanduser()
    wanted = _parse_levels(levels)
    found = _level_dirs(root) if root.is_dir() else {}
    if found:
        if wanted:
            missing = [lv for lv in wanted if lv not in found]
            if missing:
                raise BatchError(f"--tasks {path}: no {', '.join(missing)} folder; it has {', '.join(found)}")
            found = {lv: found[lv] for lv in wanted}
        return [(p, lv) for lv, folder in found.items() for p in task_paths(folder)]
    if wanted:
        raise BatchError(f"--levels needs --tasks to be a KernelBench checkout (a folder holding level1/, "
                         f"level2/, ...); {path} is not one. Drop --levels or pass the checkout's folder.")
    level = root.parent.name if root.is_file() else root.name
    level = level if _LEVEL.fullmatch(level) else ""
    return [(p, level) for p in task_paths(root)]


def _candidate_dirs(cands: Path, task: Path, level: str) -> list[Path]:
    """Where a task's candidates may be: CANDS/<stem> (the bundled layout) and, for a KernelBench level's
    task, CANDS/<level>_<stem> (what `benchmarks/exemplar_kernelbench.py` writes) or CANDS/<level>/<stem>."""
    out = [cands / task.stem]
    if level:
        out += [cands / f"{level}_{task.stem}", cands / level / task.stem]
    return out


def _resolve(value: object, base: Path, where: str, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise BatchError(f"{where}: {field!r} must be a path (a non-empty string), got {value!r}")
    p = Path(value).expanduser()
    if not p.exists() and not p.is_absolute() and (base / p).exists():
        p = base / p  # relative to the pairs file's folder
    return str(p)


def _pairs_from_file(path: str) -> list[tuple[str, str]]:
    f = Path(path).expanduser()
    try:
        data = json.loads(f.read_text())
    except FileNotFoundError:
        raise BatchError(f"--pairs {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchError(f"--pairs {path}: cannot read ({exc})") from None
    except ValueError as exc:
        raise BatchError(f"--pairs {path}: not JSON ({exc}); expected a list of "
                         '{"task": TASK.py, "candidate": CANDIDATE.py}') from None
    if not isinstance(data, list):
        raise BatchError(f"--pairs {path}: expected a JSON list of {{\"task\": ..., \"candidate\": ...}}, "
                         f"got a {type(data).__name__}")
    pairs, missing = [], []
    for i, d in enumerate(data):
        where = f"--pairs {path}: entry {i}"
        if not isinstance(d, dict):
            raise BatchError(f"{where} is a {type(d).__name__}; each entry is "
                             '{"task": TASK.py, "candidate": CANDIDATE.py}')
        for k in ("task", "candidate"):
            if k not in d:
                raise BatchError(f"{where} has no {k!r} field (it has {sorted(d)}); each entry is "
                                 '{"task": TASK.py, "candidate": CANDIDATE.py}')
        task, cand = (_resolve(d[k], f.parent, where, k) for k in ("task", "candidate"))
        missing += [f"entry {i} {k} {p}" for k, p in (("task", task), ("candidate", cand)) if not Path(p).is_file()]
        pairs.append((task, cand))
    if missing:
        more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
        raise BatchError(f"--pairs {path}: {len(missing)} path(s) are not files: {'; '.join(missing[:5])}{more}. "
                         "Relative paths are taken from the current folder, then from the pairs file's folder.")
    return pairs


def _pairs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The (task, candidate) paths of a batch: from --pairs, or from --tasks with --candidates."""
    pairs_file, tasks = getattr(args, "pairs", None), getattr(args, "tasks", None)
    backend, cands = getattr(args, "backend", None), getattr(args, "candidates", None)
    if pairs_file and tasks:
        raise BatchError("pass either --pairs FILE or --tasks PATH (with --candidates DIR), not both")
    if pairs_file:
        return _pairs_from_file(pairs_file)
    if not tasks:
        raise BatchError("batch needs --pairs FILE (a JSON list of {\"task\": ..., \"candidate\": ...}) or "
                         "--tasks PATH --candidates DIR (DIR/<task file stem>/<backend>_*.py)")
    files = _task_files(tasks, getattr(args, "levels", None))
    if not cands:
        from htam_agent.bundled_tasks import CANDIDATES_DIR, SUITE_DIR

        if all(p.parent.resolve() == SUITE_DIR.resolve() for p, _ in files):
            cands = str(CANDIDATES_DIR)  # the bundled suite's own candidates
        else:
            ex = files[0][0]
            raise BatchError(f"--tasks {tasks} needs --candidates DIR: the folder holding one subfolder per task, "
                             f"named after the task file, with that task's candidates (ModelNew) in it, e.g. "
                             f"DIR/{ex.stem}/{spec(backend or 'cpp').candidate_file('mine')}; or pass --pairs "
                             "FILE instead")
    root = Path(cands).expanduser()
    pattern = spec(backend).candidate_glob if backend else "*.py"
    if not root.is_dir():
        raise BatchError(f"--candidates {cands}: no such folder (it should hold DIR/<task file stem>/"
                         f"{pattern if backend else '<backend>_*.py'})")
    pairs, looked, other = [], [], []
    for task, level in files:
        found: list[Path] = []
        for folder in _candidate_dirs(root, task, level):
            found += [c for c in sorted(folder.glob(pattern)) if not c.name.startswith("_") and c not in found]
            if backend:
                prefix = spec(backend).candidate_prefix
                other += [c for c in sorted(folder.glob("*.py")) if not c.name.startswith(prefix)]
        pairs += [(str(task), str(c)) for c in found]
        if not found:
            looked.append(task)
    if not pairs:
        dirs = " or ".join(str(d / pattern) for d in _candidate_dirs(root, looked[0], files[0][1]))
        msg = (f"--candidates {cands}: no candidate for any of the {len(files)} task(s) of {tasks}; for "
               f"{looked[0].name} it looked for {dirs}.")
        if other:
            names = sorted({c.name.split("_", 1)[0] for c in other})
            msg += (f" It found {len(other)} file(s) of other backends ({', '.join(names)}: e.g. {other[0]}); "
                    f"drop --backend {backend} or name the candidates {pattern}.")
        else:
            stems = {p.stem for p, _ in files}
            subs = sorted(d.name for d in root.iterdir() if d.is_dir())
            stray = [d for d in subs if d not in stems and not _LEVEL.fullmatch(d)][:5]
            if stray:
                msg += f" Its subfolders ({', '.join(stray)}) are named after no task file of {tasks}."
            msg += (f" Put each task's candidates in {root}/<task file stem>/<backend>_<name>.py "
                    "(the bundled layout), or pass --pairs FILE.")
        raise BatchError(msg)
    if looked:
        shown = ", ".join(p.stem for p in looked[:5]) + (" ..." if len(looked) > 5 else "")
        print(f"note: {len(looked)} of {len(files)} task(s) have no candidate under {cands} ({shown}); "
              "they are not evaluated", file=sys.stderr)
    return pairs


def _task_id(task: str) -> str:
    p = Path(task)
    return f"{p.parent.name}/{p.stem}" if _LEVEL.fullmatch(p.parent.name) else p.stem


def cmd_batch(args: argparse.Namespace) -> int:
    try:
        pairs = _pairs(args)
    except BatchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    start_early()
    by_backend: dict[str, list[Candidate]] = {}
    for task, cand in pairs:
        c = Candidate.of(task, source_path=cand, name=Path(task).stem)
        backend = args.backend or detect_backend(c.source) or "cuda"
        by_backend.setdefault(backend, []).append(c)
    store = verdict_store(args)
    t0 = time.time()
    out = open(args.out, "w") if args.out else None
    n_ok = 0
    for backend, cands in by_backend.items():
        ev = Evaluator(eval_options(args, backend), store)

        def progress(phase: str, i: int, n: int, v: dict | None, backend: str = backend,
                     cands: list[Candidate] = cands) -> None:
            nonlocal n_ok
            what = (f"{_task_id(cands[i - 1].task_path)} {(v or {}).get('status', '')}: " if phase == "evaluate"
                    else "")
            print(f"[{time.time() - t0:7.1f}s] {backend} {phase} {i}/{n}: {what}{(v or {}).get('reason', '')[:150]}",
                  flush=True)
            if phase == "evaluate" and v is not None:
                n_ok += bool(v["accepted"])
                if out:  # written as it comes: a batch cut short keeps what it finished
                    line = with_envelope(v, candidate_path=cands[i - 1].origin, task_id=_task_id(cands[i - 1].task_path))
                    out.write(json.dumps(line, default=str) + "\n")
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
    add_arguments(p)  # the options shared with `htam eval` (options.py)
    p.set_defaults(fn=cmd_eval)
    p = sub.add_parser("batch", help="evaluate many candidates: parallel compile, then verify and time")
    p.add_argument("--pairs", help="JSON list of {task, candidate} paths")
    p.add_argument("--tasks", help="task file, folder of task files (a KernelBench level folder as it is) or "
                                   "KernelBench checkout (with --candidates)")
    p.add_argument("--levels", help="with --tasks CHECKOUT: the level folders, e.g. 1,2 or 1-3 (default: all)")
    p.add_argument("--candidates", help="folder of <task stem>/<backend>_*.py candidates (also <level>_<stem>/ "
                                        "or <level>/<stem>/ for a KernelBench level's tasks); default for the "
                                        "bundled suite: its own candidates")
    p.add_argument("--out", help="write verdicts here, one JSON per line")
    p.add_argument("--jobs", type=int, help="parallel compiles (default: all cores)")
    add_arguments(p)  # the options shared with `htam eval` (options.py)
    p.set_defaults(fn=cmd_batch)
    args = parser.parse_args(argv)
    gpu.set_role("parent")
    gpu.install_tripwire()  # tests only (HTAM_TEST_CUDA_TRIPWIRE)
    try:
        return args.fn(args)
    except TaskError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

