"""Does the memory help on problems it never saw? 5-fold cross-validation over a verdict table (issue 35).

The protocol (docs/memory_protocol.md) is fixed here, before any tuning: folds stratified by operator class and
drawn once from `PROTOCOL_SEED` (written to a file and read back, never redrawn); for each fold every learning
method trains in its own lane on the other four folds, the lane is frozen, and the fold runs with learning off
at budgets 6 and 3 and K = 1 and 2. Every evaluation is answered from the table (`replay.TableGateway`), so a
run costs about a second. The randomized-memory control is a shuffled copy of the trained htam lane.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .table import Table, load_table

PROTOCOL_SEED = 35          # issue 35; the folds, the randomized memory and the bootstrap draw from it
N_FOLDS = 5
BUDGETS = (6, 3)
KS = (1, 2)
TRAIN_BUDGET, TRAIN_K = 6, 1  # every learning lane trains the same way; see docs/memory_protocol.md
RANDOM_SEEDS = (0, 1, 2)    # random-direction draws; the other methods are deterministic with the offline coder
DET_SEED = 0
BOOTSTRAP = 2000
FOLDS_FORMAT = "htam-cv-folds"


class ProtocolError(ValueError):
    """A folds file or table that does not fit the protocol; the message says what to do."""


# -- methods ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CVMethod:
    name: str
    switches: Mapping[str, Any]           # RunContext settings
    lane: str | None                      # the trained lane whose memory it reads; None: no memory
    seeds: tuple[int, ...] = (DET_SEED,)
    randomized: bool = False              # reads a shuffled copy of the lane


_HTAM = {"memory_mode": "htam", "direction_policy": "htam", "use_strategies": True, "use_transitions": True}
METHODS: dict[str, CVMethod] = {m.name: m for m in (
    CVMethod("htam", _HTAM, "htam"),
    CVMethod("flat-memory", {**_HTAM, "memory_mode": "flat"}, "flat-memory"),
    CVMethod("refine", {**_HTAM, "memory_mode": "none"}, None),
    CVMethod("random-direction", {**_HTAM, "direction_policy": "random"}, "random-direction", RANDOM_SEEDS),
    CVMethod("randomized-memory", _HTAM, "htam", randomized=True),
    CVMethod("htam-no-strategies", {**_HTAM, "use_strategies": False}, "htam-no-strategies"),
    CVMethod("htam-no-transitions", {**_HTAM, "use_transitions": False}, "htam-no-transitions"),
)}
#: the lanes that learn, each with the switches of the method of the same name
LANES = ("htam", "flat-memory", "random-direction", "htam-no-strategies", "htam-no-transitions")
ORACLE = "oracle"


# -- folds -----------------------------------------------------------------------------------------------------
def assign_folds(classes: Mapping[str, str], k: int = N_FOLDS, seed: int = PROTOCOL_SEED) -> dict[str, int]:
    """problem -> fold in 0..k-1, stratified by class: each class is shuffled (seeded by seed and class name)
    and dealt round-robin, starting at the fold with the fewest problems so far, so every class is spread
    within one problem per fold and fold sizes differ by at most one."""
    sizes = [0] * k
    out: dict[str, int] = {}
    for cls in sorted(set(classes.values())):
        members = sorted(p for p, c in classes.items() if c == cls)
        random.Random(f"{seed}:{cls}").shuffle(members)
        start = min(range(k), key=lambda f: (sizes[f], f))
        for i, p in enumerate(members):
            f = (start + i) % k
            out[p] = f
            sizes[f] += 1
    return out


def problem_classes(table: Table) -> dict[str, str]:
    out: dict[str, str] = {}
    for rec in table:
        prior = out.setdefault(rec.problem, rec.op_class)
        if prior != rec.op_class:
            raise ProtocolError(f"{table.path}: {rec.problem} has records of classes {prior} and {rec.op_class}")
    return out


def default_folds_path(table_path: str | Path) -> Path:
    stem = Path(table_path).name.split(".jsonl")[0]
    return Path(__file__).resolve().parents[2] / "benchmarks" / "folds" / f"{stem}.folds.json"


def load_or_draw_folds(table: Table, path: str | Path, *, draw: bool) -> dict[str, int]:
    """The folds of the table's problems, read from `path`; drawn and written there only when the file does not
    exist and `draw` is set (the protocol draws them once; commit the file)."""
    path = Path(path)
    classes = problem_classes(table)
    if not path.exists():
        if not draw:
            raise ProtocolError(f"{path}: no folds file; draw them once with --draw-folds and commit the file")
        folds = assign_folds(classes)
        doc = {"format": FOLDS_FORMAT, "seed": PROTOCOL_SEED, "k": N_FOLDS, "table": Path(str(table.path)).name,
               "drawn_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "folds": {p: {"fold": folds[p], "op_class": classes[p]} for p in sorted(folds)}}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        return folds
    try:
        doc = json.loads(path.read_text())
    except ValueError as exc:
        raise ProtocolError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FOLDS_FORMAT or not isinstance(doc.get("folds"), dict):
        raise ProtocolError(f"{path}: not a folds file (format {FOLDS_FORMAT!r} with 'folds')")
    folds = {p: int(v["fold"]) for p, v in doc["folds"].items()}
    missing, extra = sorted(set(classes) - set(folds)), sorted(set(folds) - set(classes))
    if missing or extra:
        raise ProtocolError(
            f"{path}: the folds were drawn for other problems than the table {table.path} holds (not in the "
            f"folds: {missing[:5]}{'...' if len(missing) > 5 else ''}; not in the table: {extra[:5]}"
            f"{'...' if len(extra) > 5 else ''}). The protocol draws folds once per table: a new table gets a new "
            "folds file (--folds NEW --draw-folds), never a redraw of this one")
    return folds


# -- the randomized-memory control -------------------------------------------------------------------------------
def randomize_export(doc: dict[str, Any], seed: int = PROTOCOL_SEED) -> dict[str, Any]:
    """A copy of a memory export whose experience is shuffled across directions: the (previous direction,
    direction, strategies) labels of the events are permuted among the events, so every outcome (its state, its
    gain, its note) now stands under another step's direction and strategies; each learned strategy moves to a
    direction other than its own. Counts per direction and per edge stay; what they say is noise."""
    rng = random.Random(f"{seed}:randomized-memory")
    out = json.loads(json.dumps(doc))
    events = out.get("events") or []
    labels = [(e["prev_direction"], e["direction"], list(e.get("strategies") or [])) for e in events]
    rng.shuffle(labels)
    for e, (prev, d, strategies) in zip(events, labels, strict=True):
        e["prev_direction"], e["direction"], e["strategies"] = prev, d, strategies
    directions = sorted(out.get("directions") or [])
    for item in out.get("learned_strategies") or []:
        own = item["strategy"].get("direction")
        others = [d for d in directions if d != own]
        if others:
            item["strategy"]["direction"] = rng.choice(others)
    return out


def randomized_copy(src_dir: str | Path, dst_dir: str | Path, seed: int = PROTOCOL_SEED) -> dict[str, int]:
    """Write the randomized copy of the memory in `src_dir` into the empty `dst_dir`; `src_dir` is only read."""
    from htam_agent.memory.config import MemoryConfig
    from htam_agent.memory.htam import HTAMemory

    dst_dir = Path(dst_dir)
    if dst_dir.exists() and any(dst_dir.iterdir()):
        raise ProtocolError(f"{dst_dir}: not empty; a randomized copy is written into a fresh folder")
    dst_dir.mkdir(parents=True, exist_ok=True)
    export, shuffled = dst_dir / "source_export.json", dst_dir / "randomized_export.json"
    with HTAMemory(MemoryConfig.from_env(src_dir)) as src:
        src.export(export)
    shuffled.write_text(json.dumps(randomize_export(json.loads(export.read_text()), seed)))
    with HTAMemory(MemoryConfig.from_env(dst_dir)) as dst:
        rep = dst.import_file(shuffled)
    return {"events": rep.events_added, "learned_strategies": rep.learned_strategies}


def memory_events(memory_dir: str | Path) -> int:
    """How many events a memory folder holds (a frozen lane must hold as many after its test runs)."""
    from htam_agent.memory.config import MemoryConfig
    from htam_agent.memory.htam import HTAMemory

    with HTAMemory(MemoryConfig.from_env(memory_dir)) as mem:
        return mem.transitions.count()


# -- statistics ------------------------------------------------------------------------------------------------
def geomean(xs: Sequence[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def bootstrap_ci(values: Mapping[str, float], stat: Callable[[list[float]], float] = geomean,
                 n: int = BOOTSTRAP, seed: int = PROTOCOL_SEED) -> tuple[float, float]:
    """Percentile 95% interval of `stat` over problems resampled with replacement."""
    keys = sorted(values)
    if not keys:
        return (float("nan"), float("nan"))
    rng = random.Random(f"{seed}:bootstrap")
    draws = sorted(stat([values[keys[rng.randrange(len(keys))]] for _ in keys]) for _ in range(n))
    return draws[int(0.025 * n)], draws[min(n - 1, int(0.975 * n))]


def paired_ratio_ci(a: Mapping[str, float], b: Mapping[str, float], n: int = BOOTSTRAP,
                    seed: int = PROTOCOL_SEED) -> tuple[float, float, float]:
    """geomean(a) / geomean(b) over the problems both have, with a paired bootstrap 95% interval."""
    keys = sorted(set(a) & set(b))
    if not keys:
        return (float("nan"),) * 3  # type: ignore[return-value]
    ratio = {k: a[k] / b[k] for k in keys}
    lo, hi = bootstrap_ci(ratio, n=n, seed=seed)
    return geomean(list(ratio.values())), lo, hi


# -- running -------------------------------------------------------------------------------------------------------
@dataclass
class CVConfig:
    table: str
    out: str
    kb: str                                   # where the problems' files are: KB/<problem>.py
    folds_path: str
    draw_folds: bool = False
    budgets: tuple[int, ...] = BUDGETS
    ks: tuple[int, ...] = KS
    methods: tuple[str, ...] = tuple(METHODS)
    folds: tuple[int, ...] | None = None      # a subset of folds (all by default)
    workers: int = 2
    keep_runs: bool = False
    log: Callable[[str], None] = field(default=print, repr=False)


def task_path(kb: str | Path, problem: str) -> Path:
    return Path(kb) / f"{problem}.py"


def _ctx(method: CVMethod, budget: int, k: int, seed: int, learn: bool, memory_dir: Path | None, runs_dir: Path,
         backend: str, size: str) -> Any:
    from htam_agent.context import RunContext

    sw = dict(method.switches)
    return RunContext(
        backend=backend, coder="exemplar", evaluation="replay", size=None if size == "default" else size,
        max_repairs=0, steps=max(1, math.ceil(budget / k)), candidates=k, max_evaluations=budget, seed=seed,
        learn=learn and sw["memory_mode"] != "none", memory_dir=str(memory_dir) if memory_dir else None,
        runs_dir=str(runs_dir), tags=("memory-cv", f"method:{method.name}"), shipped_memory=False, **sw)


class Results:
    """BENCH/results.jsonl: one line per finished test run, appended and fsync'ed (resume skips done keys)."""

    KEY = ("fold", "method", "budget", "k", "seed", "problem")

    def __init__(self, out: Path) -> None:
        self.path = out / "results.jsonl"

    def done(self) -> set[tuple]:
        keys: set[tuple] = set()
        if self.path.exists():
            for raw in self.path.read_text().splitlines():
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue  # a line torn by a kill
                keys.add(tuple(rec[k] for k in self.KEY))
        return keys

    def records(self) -> list[dict[str, Any]]:
        out = {}
        if self.path.exists():
            for raw in self.path.read_text().splitlines():
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                out[tuple(rec[k] for k in self.KEY)] = rec
        return list(out.values())

    def append(self, rec: dict[str, Any]) -> None:
        import fcntl

        line = (json.dumps(rec, sort_keys=True) + "\n").encode()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class Unit:
    """One fold and one lane: train the lane (if it learns), then run every method that reads it on the fold."""

    fold: int
    lane: str | None            # None: the memoryless methods


def plan_units(cfg: CVConfig, n_folds: int) -> list[Unit]:
    lanes = sorted({METHODS[m].lane for m in cfg.methods}, key=lambda x: (x is None, LANES.index(x) if x else 0))
    return [Unit(f, lane) for f in (cfg.folds or range(n_folds)) for lane in lanes]


def _one_run(path: Path, ctx: Any, gateway: Any, run_id: str, keep: bool) -> dict[str, Any]:
    from htam_agent.agent import run_optimization

    t0 = time.time()
    res = run_optimization(str(path), ctx, evaluator=gateway, run_id=run_id).as_dict()
    wall = time.time() - t0
    steps = res.get("steps") or []
    if not keep:
        shutil.rmtree(Path(ctx.runs_dir) / run_id, ignore_errors=True)
    return {
        "speedup_eager": res.get("best_speedup_vs_eager"), "speedup_compile": res.get("best_speedup_vs_compile"),
        "correct": bool(res.get("correct")), "evaluations": int(res.get("evaluations") or 0),
        "stop_reason": res.get("stop_reason"), "wall_s": round(wall, 3),
        "not_evaluated": sum(1 for s in steps if s.get("status") == "not_evaluated"),
        "directions": [s.get("direction") for s in steps],
    }


def replay_gateway(table: Table, kb: str | Path) -> Any:
    """The gateway that answers every evaluation of the table's problems (files KB/<problem>.py) from the table."""
    from .replay import TableGateway

    backend = next(iter(table)).backend
    return TableGateway(table, backend, problems={str(task_path(kb, p)): p for p in problem_classes(table)})


def train_lane(gateway: Any, method: CVMethod, problems: Sequence[str], lane_dir: Path, runs_dir: Path,
               kb: str | Path, *, keep_runs: bool = False, log: Callable[[str], None] = print, tag: str = ""
               ) -> int:
    """Train one lane from scratch: wipe `lane_dir`, then run each problem in the given order at the training
    budget (TRAIN_BUDGET evaluations, K=TRAIN_K), learning on, every evaluation answered by `gateway`. The same
    code trains the protocol's lanes and the memory that ships (bench/shipped_memory.py). Returns the runs."""
    from htam_agent.run.resources import clear_cache

    table = gateway.table
    backend = gateway.backend
    sizes = {r.problem: r.size for r in table}
    shutil.rmtree(lane_dir, ignore_errors=True)
    lane_dir.mkdir(parents=True)
    tag = tag or method.name
    for i, p in enumerate(problems, 1):
        ctx = _ctx(method, TRAIN_BUDGET, TRAIN_K, DET_SEED, True, lane_dir, runs_dir, backend, sizes[p])
        r = _one_run(task_path(kb, p), ctx, gateway, f"train-{method.name}-{p.replace('/', '_')}", keep_runs)
        log(f"[{tag}] train {i}/{len(problems)} {p}: {_fmt(r['speedup_eager'])} ({r['wall_s']:.1f} s)"
            + (f", {r['not_evaluated']} step(s) not evaluated" if r["not_evaluated"] else ""))
    clear_cache()
    return len(problems)


def run_unit(cfg: CVConfig, unit: Unit) -> dict[str, Any]:
    """Train (if needed) and test one unit; resumable: a lane is trained once (a half-trained lane is wiped and
    trained again, so no killed run counts twice), and test runs already recorded are skipped."""
    from htam_agent.run.resources import clear_cache

    table = load_table(cfg.table)
    folds = load_or_draw_folds(table, cfg.folds_path, draw=False)
    out = Path(cfg.out)
    classes = problem_classes(table)
    backend = next(iter(table)).backend
    sizes = {r.problem: r.size for r in table}
    gateway = replay_gateway(table, cfg.kb)
    test = sorted(p for p, f in folds.items() if f == unit.fold)
    train = sorted(p for p, f in folds.items() if f != unit.fold)
    tag = f"fold {unit.fold} {unit.lane or 'no memory'}"
    stats = {"unit": tag, "train_runs": 0, "test_runs": 0, "wall_s": 0.0}
    t_unit = time.time()
    lane_dir = out / "memory" / f"fold{unit.fold}" / (unit.lane or "none")
    runs_dir = out / "runs" / f"fold{unit.fold}"
    if unit.lane is not None:
        marker = lane_dir / "TRAINED.json"
        if not marker.exists():
            stats["train_runs"] += train_lane(gateway, METHODS[unit.lane], train, lane_dir, runs_dir, cfg.kb,
                                              keep_runs=cfg.keep_runs, log=cfg.log, tag=tag)
            marker.write_text(json.dumps({"events": memory_events(lane_dir), "problems": train,
                                          "budget": TRAIN_BUDGET, "k": TRAIN_K}) + "\n")
    results = Results(out)
    done = results.done()
    for name in cfg.methods:
        m = METHODS[name]
        if m.lane != unit.lane:
            continue
        mem_dir: Path | None = lane_dir if m.lane else None
        if m.randomized:
            mem_dir = out / "memory" / f"fold{unit.fold}" / f"{m.lane}-randomized"
            if not (mem_dir / "RANDOMIZED.json").exists():
                shutil.rmtree(mem_dir, ignore_errors=True)
                got = randomized_copy(lane_dir, mem_dir)
                (mem_dir / "RANDOMIZED.json").write_text(json.dumps(got) + "\n")
        before = memory_events(mem_dir) if mem_dir else None
        for budget in cfg.budgets:
            for k in cfg.ks:
                for seed in m.seeds:
                    for p in test:
                        key = (unit.fold, name, budget, k, seed, p)
                        if key in done:
                            continue
                        ctx = _ctx(m, budget, k, seed, False, mem_dir, runs_dir, backend, sizes[p])
                        run_id = f"test-{name}-b{budget}-k{k}-s{seed}-{p.replace('/', '_')}"
                        r = _one_run(task_path(cfg.kb, p), ctx, gateway, run_id, cfg.keep_runs)
                        results.append({**dict(zip(Results.KEY, key, strict=True)), "op_class": classes[p], **r})
                        stats["test_runs"] += 1
                        cfg.log(f"[{tag}] {name} b{budget} k{k} s{seed} {p}: {_fmt(r['speedup_eager'])} "
                                f"({r['evaluations']} evals, {r['wall_s']:.1f} s)")
        clear_cache()
        if mem_dir is not None and memory_events(mem_dir) != before:
            raise ProtocolError(f"{mem_dir}: the frozen memory changed during {name}'s test runs "
                                f"({before} events before, {memory_events(mem_dir)} after): learning was not off")
    stats["wall_s"] = round(time.time() - t_unit, 1)
    return stats


def _fmt(x: float | None) -> str:
    return "nothing accepted" if x is None else f"{x:.3f}x"


def _worker(args: tuple[CVConfig, Unit]) -> dict[str, Any]:
    cfg, unit = args
    cfg.log = lambda s: print(s, flush=True)
    return run_unit(cfg, unit)


def run_cv(cfg: CVConfig) -> dict[str, Any]:
    """Every unit of the protocol (in `cfg.workers` processes), then the summary."""
    table = load_table(cfg.table)
    folds = load_or_draw_folds(table, cfg.folds_path, draw=cfg.draw_folds)
    Path(cfg.out).mkdir(parents=True, exist_ok=True)
    units = plan_units(cfg, N_FOLDS)
    cfg.log(f"{len(table.problems)} problems, {len(units)} units (fold x lane), methods {', '.join(cfg.methods)}; "
            f"fold sizes {[sum(1 for f in folds.values() if f == i) for i in range(N_FOLDS)]}")
    t0 = time.time()
    if cfg.workers <= 1:
        for u in units:
            cfg.log(f"done: {run_unit(cfg, u)}")
    else:
        import multiprocessing as mp

        log = cfg.log
        cfg.log = print  # a picklable logger for the workers
        with mp.get_context("spawn").Pool(cfg.workers) as pool:
            for st in pool.imap_unordered(_worker, [(cfg, u) for u in units]):
                log(f"done: {st}")
        cfg.log = log
    summary = summarize(table, folds, Results(Path(cfg.out)).records(), cfg)
    summary["wall_s"] = round(time.time() - t0, 1)
    (Path(cfg.out) / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return summary


# -- the summary -----------------------------------------------------------------------------------------------------
def oracle_values(table: Table) -> dict[str, dict[str, float | None]]:
    """problem -> the best accepted variant's speedups (1.0 over eager where none was accepted)."""
    out: dict[str, dict[str, float | None]] = {}
    for p in table.problems:
        best = table.best(p)
        out[p] = ({"speedup_eager": best.speedup_eager, "speedup_compile": best.speedup_compile} if best else
                  {"speedup_eager": None, "speedup_compile": None})
    return out


def _eager_vs_compile(table: Table) -> dict[str, float | None]:
    """problem -> eager's speedup over torch.compile (what a user without a kernel keeps), when both were timed."""
    out: dict[str, float | None] = {}
    for p in table.problems:
        pairs = [(r.eager_ms, r.compile_ms) for r in table.variants(p) if r.eager_ms and r.compile_ms]
        out[p] = (pairs[0][1] / pairs[0][0]) if pairs else None
    return out


def per_problem(recs: Iterable[dict[str, Any]], fallback_compile: Mapping[str, float | None]
                ) -> dict[str, dict[str, float]]:
    """baseline -> problem -> the mean over seeds of the run's best (nothing accepted: the reference stays,
    1.0 over eager and eager's own figure over torch.compile)."""
    acc: dict[str, dict[str, list[float]]] = {"eager": defaultdict(list), "compile": defaultdict(list)}
    for r in recs:
        p = r["problem"]
        acc["eager"][p].append(r["speedup_eager"] if r.get("speedup_eager") else 1.0)
        c = r.get("speedup_compile") if r.get("speedup_eager") else fallback_compile.get(p)
        if c:
            acc["compile"][p].append(c)
    return {b: {p: sum(v) / len(v) for p, v in d.items() if v} for b, d in acc.items()}


def _block(values: Mapping[str, float], classes: Mapping[str, str]) -> dict[str, Any]:
    if not values:
        return {"geomean": None, "ci": None, "n": 0}
    lo, hi = bootstrap_ci(values)
    by_cls: dict[str, dict[str, float]] = defaultdict(dict)
    for p, v in values.items():
        by_cls[classes[p]][p] = v
    return {"geomean": geomean(list(values.values())), "ci": [lo, hi], "n": len(values),
            "fast_1": sum(v > 1.0 for v in values.values()) / len(values),
            "per_class": {c: {"geomean": geomean(list(vs.values())), "ci": list(bootstrap_ci(vs)), "n": len(vs)}
                          for c, vs in sorted(by_cls.items())}}


RATIOS = (("htam", "refine"), ("htam", "flat-memory"), ("htam", "random-direction"), ("randomized-memory", "htam"),
          ("htam", ORACLE), ("htam-no-strategies", "htam"), ("htam-no-transitions", "htam"))


def summarize(table: Table, folds: Mapping[str, int], records: list[dict[str, Any]], cfg: CVConfig,
              only: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """The figures of every (budget, K): per method, geomeans with bootstrap intervals, fast_1 and classes; the
    protocol's ratios. ``only`` keeps the problems it accepts (the figure on a subset reported apart, e.g. the
    problems added after the last policy change: docs/memory_protocol.md); the folds and lanes stay those of the
    whole table."""
    classes = {p: c for p, c in problem_classes(table).items() if only is None or only(p)}
    records = [r for r in records if only is None or only(r["problem"])]
    fallback = _eager_vs_compile(table)
    tested = {p for p, f in folds.items() if (cfg.folds is None or f in cfg.folds) and p in classes}
    oracle = {p: v for p, v in oracle_values(table).items() if p in tested}
    oracle_pp = {"eager": {p: v["speedup_eager"] or 1.0 for p, v in oracle.items()},
                 "compile": {p: (v["speedup_compile"] if v["speedup_eager"] else fallback.get(p))
                             for p, v in oracle.items()}}
    oracle_pp["compile"] = {p: v for p, v in oracle_pp["compile"].items() if v}
    groups: dict[tuple[str, int, int], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["method"], r["budget"], r["k"])].append(r)
    out: dict[str, Any] = {"problems": len(classes), "folds": dict(folds), "configs": {}}
    for budget in cfg.budgets:
        for k in cfg.ks:
            pp = {m: per_problem(groups.get((m, budget, k), []), fallback) for m in cfg.methods}
            pp[ORACLE] = oracle_pp
            conf: dict[str, Any] = {"methods": {}, "ratios": {}}
            for m, by_base in pp.items():
                conf["methods"][m] = {b: _block(v, classes) for b, v in by_base.items()}
                conf["methods"][m]["runs"] = len(groups.get((m, budget, k), []))
                conf["methods"][m]["not_evaluated_steps"] = sum(r.get("not_evaluated", 0)
                                                                for r in groups.get((m, budget, k), []))
            for a, b in RATIOS:
                if a in pp and b in pp:
                    conf["ratios"][f"{a} / {b}"] = {base: list(paired_ratio_ci(pp[a][base], pp[b][base]))
                                                    for base in ("eager", "compile")}
            out["configs"][f"b{budget}-k{k}"] = conf
    return out


def report_lines(summary: dict[str, Any]) -> list[str]:
    """The summary as Markdown tables: geomean [95% CI] and fast_1 per method and config, then the ratios."""
    def ci(block: dict[str, Any]) -> str:
        if not block or block.get("geomean") is None:
            return "n/a"
        lo, hi = block["ci"]
        return f"{block['geomean']:.3f}x [{lo:.3f}, {hi:.3f}]"

    lines = []
    for name, conf in summary["configs"].items():
        lines += [f"\n### {name} (budget {name.split('-')[0][1:]}, K={name.split('-k')[1]})", "",
                  "| method | over eager [95% CI] | fast_1 | over torch.compile [95% CI] | runs | not evaluated |",
                  "|---|---|---|---|---|---|"]
        for m, res in conf["methods"].items():
            e = res["eager"]
            lines.append(f"| {m} | {ci(e)} | {e.get('fast_1', 0):.2f} | {ci(res['compile'])} | "
                         f"{res.get('runs', '-')} | {res.get('not_evaluated_steps', '-')} |")
        lines += ["", "| ratio | over eager [95% CI] | over torch.compile [95% CI] |", "|---|---|---|"]
        for r, v in conf["ratios"].items():
            def fmt(t: list[float]) -> str:
                return "n/a" if any(x != x for x in t) else f"{t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}]"
            lines.append(f"| {r} | {fmt(v['eager'])} | {fmt(v['compile'])} |")
        classes = sorted({c for res in conf["methods"].values() for c in res["eager"].get("per_class", {})})
        if classes:
            ms = list(conf["methods"])
            lines += ["", "| class | " + " | ".join(ms) + " |", "|---|" + "---|" * len(ms)]
            for c in classes:
                cells = []
                for m in ms:
                    b = conf["methods"][m]["eager"].get("per_class", {}).get(c)
                    cells.append(f"{b['geomean']:.3f}x (n={b['n']})" if b else "-")
                lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return lines


def plot(summary: dict[str, Any], path: str | Path) -> Path:
    """One panel per (budget, K): geomean over eager with its 95% interval, per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    confs = list(summary["configs"].items())
    fig, axes = plt.subplots(1, len(confs), figsize=(4.2 * len(confs), 4.2), squeeze=False, sharey=True)
    for ax, (name, conf) in zip(axes[0], confs, strict=True):
        ms = [m for m, r in conf["methods"].items() if r["eager"].get("geomean")]
        g = [conf["methods"][m]["eager"]["geomean"] for m in ms]
        lo = [g[i] - conf["methods"][m]["eager"]["ci"][0] for i, m in enumerate(ms)]
        hi = [conf["methods"][m]["eager"]["ci"][1] - g[i] for i, m in enumerate(ms)]
        ax.bar(range(len(ms)), g, yerr=[lo, hi], capsize=3,
               color=["#c44" if m == "htam" else "#888" if m == ORACLE else "#69c" for m in ms])
        ax.axhline(1.0, color="k", lw=0.6)
        ax.set_xticks(range(len(ms)), ms, rotation=60, ha="right", fontsize=8)
        ax.set_title(name)
    axes[0][0].set_ylabel("geomean speedup over eager (95% CI)")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


__all__ = ["BUDGETS", "CVConfig", "CVMethod", "KS", "LANES", "METHODS", "N_FOLDS", "PROTOCOL_SEED", "ProtocolError",
           "assign_folds", "bootstrap_ci", "default_folds_path", "load_or_draw_folds", "paired_ratio_ci", "plot",
           "randomize_export", "randomized_copy", "replay_gateway", "report_lines", "run_cv", "run_unit", "summarize",
           "train_lane"]
