"""Run tasks x methods x seeds and record each result as soon as it finishes.

The plan is deterministic: for each task in suite order, every (method, seed) "lane" in the order given. A
lane has its own memory folder (``BENCH/memory/<method>-s<seed>``), persisting across the lane's tasks and
never shared with another lane, so methods do not learn from each other; its artifacts go to
``BENCH/runs/<method>-s<seed>/<run id>``.

Locally, one worker thread per GPU (device_index 0..n-1 of the visible GPUs) takes the next unit of the plan;
the cpp backend uses one worker unless told otherwise (parallel CPU timing would disturb itself). Candidate
compiles are spread over the CPU cores by the evaluator. With one worker the bench is fully sequential and
each lane sees its tasks in suite order; with several, different lanes mostly run side by side.

``run_fn(task_path, ctx, *, run_id) -> RunResult | dict`` does one optimization run; the default is the agent
(`htam_agent.agent.run_optimization`). Tests and other drivers inject their own.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htam_agent.backend_registry import is_cpu, spec
from htam_agent.context import RunContext

from .methods import Method, get_methods, max_evaluations
from .records import RecordStore, key_str, record_key
from .suite import BenchTask, resolve_suite

RunFn = Callable[..., Any]


def agent_run_fn(task_path: str, ctx: RunContext, *, run_id: str | None = None) -> Any:
    """The real agent, imported when first used (it pulls in LangGraph, the memory and the LLM client).

    A run killed with the bench left its artifact folder (run.json, checkpoints): it is resumed from its last
    finished step instead of starting over. If that resume fails, the folder is set aside and the run starts
    fresh under the same id.
    """
    from htam_agent.agent import run_optimization

    if run_id:
        folder = ctx.runs_path() / run_id
        if (folder / "run.json").is_file():
            try:
                return run_optimization(task_path, ctx, run_id=run_id, resume=True)
            except Exception:  # noqa: BLE001 - a broken checkpoint: keep it for inspection, run again
                folder.rename(folder.with_name(f"{run_id}.failed-{int(time.time())}"))
    return run_optimization(task_path, ctx, run_id=run_id)


@dataclass
class BenchConfig:
    suite: str
    bench_dir: str
    methods: list[str]
    base: RunContext
    budget: int = 6
    seeds: tuple[int, ...] = (0,)
    levels: str | None = None
    task_filter: str | None = None
    limit: int | None = None
    workers: int | None = None   # None: the visible GPU count (cuda/triton), 1 for cpp

    def __post_init__(self) -> None:
        self.bench_dir = str(Path(self.bench_dir).expanduser().resolve())
        self.seeds = tuple(self.seeds)
        if not self.seeds:
            raise ValueError("at least one seed")


@dataclass
class Unit:
    """One optimization run of the plan."""

    task: BenchTask
    method: Method
    seed: int
    budget: int
    ctx: RunContext
    run_id: str

    @property
    def lane(self) -> str:
        return f"{self.method.name}-s{self.seed}"

    def base_record(self) -> dict[str, Any]:
        ctx = self.ctx
        return {
            **self.task.as_dict(),
            "method": self.method.name, "seed": self.seed, "budget": self.budget, "backend": ctx.backend,
            "coder": ctx.model if ctx.coder_kind == "llm" else "exemplar", "size": ctx.size or "auto",
            "max_evaluations": max_evaluations(ctx), "uses_budget": self.method.uses_budget,
            "run_id": self.run_id, "lane": self.lane,
        }

    @property
    def key(self) -> tuple:
        return record_key(self.base_record())


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


def namespace(bench_dir: Path, lane: str) -> str:
    """The lane's Chroma collection prefix: the same on every resume of this bench folder, different for another
    folder of the same name (two benches on one server must not share what they learn)."""
    digest = hashlib.sha1(str(bench_dir.resolve()).encode()).hexdigest()[:8]
    return _slug(f"htam_{digest}_{lane}_{bench_dir.name}")[:60].rstrip("_.-")


def plan(config: BenchConfig, tasks: list[BenchTask] | None = None) -> list[Unit]:
    """Every unit of the bench, in run order (task-major, then lanes in the order given)."""
    methods = get_methods(config.methods)
    tasks = tasks if tasks is not None else resolve_suite(config.suite, config.levels, config.task_filter,
                                                          config.limit)
    root = Path(config.bench_dir)
    units = []
    for task in tasks:
        for method in methods:
            for seed in config.seeds:
                lane = f"{method.name}-s{seed}"
                # each lane learns alone: its own folder, and its own collections on a shared Chroma server;
                # it starts from what it learns (no shipped experience: the bench compares methods from empty)
                ctx = method.context(config.base, config.budget).with_(
                    seed=seed, memory_dir=str(root / "memory" / lane), runs_dir=str(root / "runs" / lane),
                    memory_namespace=namespace(root, lane), shipped_memory=False)
                run_id = _slug(f"{task.id}--{lane}-b{config.budget}")
                units.append(Unit(task, method, seed, config.budget, ctx, run_id))
    return units


def result_record(unit: Unit, result: Any = None, error: str = "", wall: float = 0.0) -> dict[str, Any]:
    """The record of a finished unit: its key, the headline numbers, the artifact paths and the full result."""
    rec = unit.base_record()
    if result is None:
        rec.update(status="error", correct=False, error=error, wall_seconds=round(wall, 3), evaluations=0,
                   llm_calls=0, input_tokens=0, output_tokens=0, speedup_vs_eager=None, speedup_vs_compile=None,
                   stop_reason="error", artifact_dir=None, best_code_path=None, result=None)
    else:
        res = result.as_dict() if hasattr(result, "as_dict") else dict(result)
        rec.update(
            status="done", correct=bool(res.get("correct")),
            speedup_vs_eager=res.get("best_speedup_vs_eager"), speedup_vs_compile=res.get("best_speedup_vs_compile"),
            roofline_fraction=res.get("best_roofline_fraction"), best_step=res.get("best_step"),
            evaluations=int(res.get("evaluations") or 0), llm_calls=int(res.get("llm_calls") or 0),
            input_tokens=int(res.get("input_tokens") or 0), output_tokens=int(res.get("output_tokens") or 0),
            wall_seconds=float(res.get("wall_seconds") or wall), stop_reason=res.get("stop_reason", ""),
            artifact_dir=res.get("artifact_dir"), best_code_path=res.get("best_code_path"),
            error=res.get("error", ""), result=res,
        )
    rec["context"] = unit.ctx.as_dict()
    rec["finished_at"] = time.time()
    return rec


def unloadable_record(unit: Unit, reason: str) -> dict[str, Any]:
    """The record of a unit whose task file cannot be loaded: not run, not a harness error; checked again on
    the next bench run (so a fixed file runs then)."""
    rec = result_record(unit, None, reason)
    rec.update(status="unloadable", stop_reason="unloadable")
    return rec


class TaskCheck:
    """Whether a bench task can be run at all, checked once per task file before its first run.

    Loads the file as the evaluator will (module executed, `Model`, `get_inputs`, `get_init_inputs` checked,
    the inputs built on the meta device, so a GPU-sized KernelBench file allocates nothing) and builds the model
    on the meta device with `get_init_inputs()` (a wrong argument count shows here). On the cpp backend without
    an explicit size it also asks whether the task has a small size (its SMALL_SIZES, or one derived from its
    size globals): without one it runs at its default size, which is said as a note on the record.
    """

    def __init__(self, backend: str, size: str | None) -> None:
        self.backend, self.size = backend, size
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[str | None, str]] = {}

    def __call__(self, task: BenchTask) -> tuple[str | None, str]:
        """(reason it cannot run or None, note)."""
        with self._lock:
            if task.path not in self._seen:
                self._seen[task.path] = self._check(task)
            return self._seen[task.path]

    def _check(self, task: BenchTask) -> tuple[str | None, str]:
        try:
            return self._load(task)
        except Exception as exc:  # noqa: BLE001 - whatever the file does, it is the task's reason
            return f"{task.path}: loading failed: {type(exc).__name__}: {exc}", ""

    def _load(self, task: BenchTask) -> tuple[str | None, str]:
        from htam_agent.evaluation.tasks import TaskError, has_size, load_task

        size = self.size or "default"
        try:
            loaded = load_task(task.path, size=size)
        except TaskError as exc:
            return str(exc), ""
        import torch

        try:
            with torch.device("meta"):
                loaded.model_cls(*loaded.get_init_inputs())
        except TypeError as exc:
            return (f"{task.path}: Model(*get_init_inputs()) raised TypeError: {exc}. get_init_inputs() must "
                    "return the constructor's arguments in order."), ""
        except Exception:  # noqa: BLE001 - ops the meta device cannot run: the evaluator builds it for real
            pass
        note = ""
        want = spec(self.backend).default_size  # 'small' on the CPU: the evaluator's choice when there is one
        if want != "default" and not self.size and not has_size(loaded.source, want, task.path):
            problem = (loaded.derived_sizes().get("problems") or {}).get(want, "")
            note = (f"no {want} size (" + (problem or f"the file has no {want.upper()}_SIZES") + "): runs on the "
                    f"{spec(self.backend).device_type.upper()} at its default size")
        return None, note


def execute_unit(unit: Unit, run_fn: RunFn) -> dict[str, Any]:
    """Run one unit; an exception of the run (not of the candidate: those are verdicts) becomes an error record."""
    t0 = time.time()
    try:
        result = run_fn(unit.task.path, unit.ctx, run_id=unit.run_id)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - recorded, retried on the next run
        tb = traceback.format_exc(limit=8)
        return result_record(unit, None, f"{type(exc).__name__}: {exc}\n{tb}", time.time() - t0)
    return result_record(unit, result, wall=time.time() - t0)


def visible_gpus() -> int:
    """GPUs this process may use: CUDA_VISIBLE_DEVICES if set, else nvidia-smi's count (no CUDA init here)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return len([d for d in env.split(",") if d.strip() and d.strip() != "-1"])
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU ")) if out.returncode == 0 else 0


def default_workers(backend: str) -> int:
    return 1 if is_cpu(backend) else max(1, visible_gpus())


@dataclass
class BenchOutcome:
    units: list[Unit]
    ran: int = 0
    skipped: int = 0
    errors: int = 0
    unloadable: int = 0    # runs not made because their task file cannot be loaded (record status "unloadable")
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def keys(self) -> list[tuple]:
        return [u.key for u in self.units]


class _Progress:
    """A rich progress bar and one line per finished run (or nothing)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.enabled = enabled and total > 0
        self._lock = threading.Lock()
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.console = Console(stderr=True)
            self.bar = Progress(TextColumn("[bold]bench"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                TextColumn("{task.description}"), console=self.console, transient=False)
            self.task_id = self.bar.add_task("", total=total)

    def __enter__(self) -> _Progress:
        if self.enabled:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            self.bar.__exit__(*exc)

    def start(self, unit: Unit) -> None:
        if self.enabled:
            with self._lock:
                from rich.markup import escape

                self.bar.update(self.task_id, description=escape(f"{unit.task.id} [{unit.lane}]"))

    def done(self, rec: dict[str, Any]) -> None:
        if not self.enabled:
            return
        from rich.markup import escape

        where = escape(f"{rec['task']} [{rec['lane']}]")
        with self._lock:
            if rec["status"] == "error":
                line = f"[red]error[/] {where}: {escape(rec['error'].splitlines()[0][:160])}"
            elif rec["status"] == "unloadable":
                line = f"[yellow]could not load[/] {where}: {escape(rec['error'][:300])}"
            elif rec["correct"]:
                s = rec.get("speedup_vs_eager")
                line = (f"[green]ok[/] {where}: {'untimed' if s is None else f'{s:.2f}x eager'}, "
                        f"{rec['evaluations']} eval(s)")
            else:
                line = f"[yellow]no correct kernel[/] {where} ({rec['evaluations']} eval(s))"
            self.bar.console.print(line, highlight=False, soft_wrap=True)
            self.bar.advance(self.task_id)


def run_bench(config: BenchConfig, run_fn: RunFn | None = None, *, progress: bool = True,
              units: list[Unit] | None = None) -> BenchOutcome:
    """Run every unfinished unit of the plan locally; finished keys (done records) are skipped."""
    run_fn = run_fn or agent_run_fn
    units = units if units is not None else plan(config)
    store = RecordStore(config.bench_dir)
    write_manifest(config, units)
    done = store.done_keys()
    todo = [u for u in units if u.key not in done]
    outcome = BenchOutcome(units=units, skipped=len(units) - len(todo))
    workers = max(1, min(config.workers or default_workers(config.base.backend), len(todo) or 1))
    gpu = not is_cpu(config.base.backend)

    queue = list(todo)
    qlock = threading.Lock()
    failures: list[BaseException] = []
    check = TaskCheck(config.base.backend, config.base.size)

    def worker(slot: int, bar: _Progress) -> None:
        while True:
            with qlock:
                if not queue or failures:
                    return
                unit = queue.pop(0)
            if gpu:
                unit = Unit(unit.task, unit.method, unit.seed, unit.budget,
                            unit.ctx.with_(device_index=slot), unit.run_id)
            bar.start(unit)
            try:
                problem, note = check(unit.task)
                if problem:
                    rec = unloadable_record(unit, problem)
                else:
                    rec = execute_unit(unit, run_fn)
                    if note:
                        rec["notes"] = [note]
                store.append(rec)
            except BaseException as exc:  # noqa: BLE001 - stop the bench, re-raised in the caller's thread
                failures.append(exc)
                return
            with qlock:
                outcome.ran += 1
                outcome.errors += rec["status"] == "error"
                outcome.unloadable += rec["status"] == "unloadable"
            bar.done(rec)

    with _Progress(len(todo), progress) as bar:
        if workers == 1:
            worker(config.base.device_index if gpu else 0, bar)
        else:
            threads = [threading.Thread(target=worker, args=(i, bar), daemon=True, name=f"bench-{i}")
                       for i in range(workers)]
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
    if failures:
        raise failures[0]
    outcome.records = store.select(outcome.keys)
    return outcome


def write_manifest(config: BenchConfig, units: list[Unit]) -> None:
    """BENCH/bench.json: the last invocation's settings (the records carry each run's own context)."""
    import json

    path = Path(config.bench_dir) / "bench.json"
    data = {
        "suite": config.suite, "methods": list(config.methods), "budget": config.budget, "seeds": list(config.seeds),
        "levels": config.levels, "filter": config.task_filter, "limit": config.limit,
        "base_context": config.base.as_dict(), "units": len(units),
        "keys": [key_str(u.key) for u in units], "written_at": time.time(),
    }
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    os.replace(tmp, path)


__all__ = ["BenchConfig", "BenchOutcome", "TaskCheck", "Unit", "agent_run_fn", "default_workers", "execute_unit",
           "plan", "result_record", "run_bench", "unloadable_record", "visible_gpus"]
