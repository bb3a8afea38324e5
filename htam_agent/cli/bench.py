"""`htam bench SUITE ...`: run methods on a suite at equal evaluation budget, then write the report.

`cli/main.py` mounts `bench_command` as `htam bench`; `app` is the same command as a one-command typer app, for
tests that invoke it without the rest of `htam`. What it drives lives in `htam_agent/bench/`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from htam_agent.backend_registry import choices

app = typer.Typer(name="bench", add_completion=False,
                  help="Benchmark methods on a suite at equal evaluation budget.")


def _fail(msg: str) -> typer.Exit:
    from rich.console import Console

    Console(stderr=True, soft_wrap=True).print(f"[red]error:[/] {msg}", highlight=False)
    return typer.Exit(2)


def _suite_slug(suite: str) -> str:
    from htam_agent.bench.suite import BUNDLED

    name = "bundled" if suite in BUNDLED else (Path(suite).expanduser().resolve().name or "suite")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


@app.command()
def bench_command(
    suite: Annotated[str, typer.Argument(help="'bundled' (the bundled suite), a folder of KernelBench-format "
                                              "files, or a KernelBench checkout (its level folders)")],
    levels: Annotated[str | None, typer.Option(help="KernelBench levels, e.g. 1,2 or 1-3")] = None,
    task_filter: Annotated[str | None, typer.Option("--filter", help="comma list of substrings or globs "
                                                                      "matched against task ids")] = None,
    limit: Annotated[int | None, typer.Option(help="only the first N tasks (after --levels/--filter)")] = None,
    methods: Annotated[str, typer.Option(help="comma list of methods, or 'all' (see --list-methods)")] =
        "htam,one-shot,refine,flat-memory,best-of-n",
    budget: Annotated[int, typer.Option(help="evaluations per task for every method (repairs count)")] = 6,
    seeds: Annotated[str, typer.Option(help="comma list of seeds; each method x seed is one run per task")] = "0",
    model: Annotated[str | None, typer.Option(help="LLM model (default HTAM_MODEL; none: the exemplar coder)")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint (HTAM_BASE_URL)")] = None,
    coder: Annotated[str | None, typer.Option(help="auto | llm | exemplar (HTAM_CODER)")] = None,
    backend: Annotated[str | None, typer.Option(help=f"{choices()} (HTAM_BACKEND)")] = None,
    size: Annotated[str | None, typer.Option(help="default | small | alt (default: the evaluator's choice)")] = None,
    max_repairs: Annotated[int | None, typer.Option(help="most repairs per candidate the budget split may use")] = None,
    baselines: Annotated[str, typer.Option(help="comma list of eager,compile to time against (fast_p needs them)")]
        = "eager,compile",
    out: Annotated[Path | None, typer.Option(help="bench folder (results.jsonl, memory/, runs/, report/); "
                                                  "default htam-bench/<suite>-<backend>-<coder>")] = None,
    workers: Annotated[int | None, typer.Option(help="parallel runs on this host (default: one per GPU; 1 on the CPU)")]
        = None,
    ray: Annotated[str | None, typer.Option("--ray", help="run on the Ray cluster at ADDRESS "
                                                          "('auto', 'host:6379', 'ray://host:10001', 'local')")] = None,
    chroma_url: Annotated[str | None, typer.Option(help="Chroma server the memory is shared through "
                                                        "(HTAM_CHROMA_URL)")] = None,
    show_plan: Annotated[bool, typer.Option("--plan", help="print the runs and their budgets, run nothing")] = False,
    check_only: Annotated[bool, typer.Option("--check", help="load every task as a run would (on cpp also its small "
                                                             "size), say which cannot load and why; run nothing")]
        = False,
    report_only: Annotated[bool, typer.Option("--report-only", help="only rewrite the report from the records")]
        = False,
    no_report: Annotated[bool, typer.Option("--no-report", help="do not write the report")] = False,
    list_methods: Annotated[bool, typer.Option("--list-methods", help="list the methods and exit")] = False,
) -> None:
    """Run METHODS on every task of SUITE at an equal evaluation budget; resumable and incremental.

    SUITE is 'bundled', a folder of KernelBench-format files (a KernelBench level folder as it is), or a
    KernelBench checkout (its root or its KernelBench/ folder; --levels 1,2,3 picks level folders). Tasks are
    named level/problem (level1/19_ReLU). A task file that cannot load is recorded as 'unloadable' with its
    reason and not run (exit status 0 unless a run failed in the harness).

    Results go to OUT/results.jsonl (one record per task, method and seed, written as each run finishes; a
    rerun skips finished runs, so a killed bench continues and an added method reuses the others), the report
    to OUT/report/ (report.md, report.html, results.json, plots).
    """
    from htam_agent.bench.methods import METHODS, MethodError, get_methods, max_evaluations
    from htam_agent.bench.suite import SuiteError, resolve_suite
    from htam_agent.context import ConfigError, RunContext

    if list_methods:
        for m in METHODS.values():
            typer.echo(f"{m.name:<22} {m.description}")
        raise typer.Exit(0)
    names = list(METHODS) if methods.strip() == "all" else [m for m in methods.split(",") if m.strip()]
    try:
        chosen = get_methods(names)
    except MethodError as exc:
        raise _fail(str(exc)) from exc
    if budget < 1:
        raise _fail(f"--budget must be at least 1 evaluation per task (got {budget})")
    try:
        seed_list = tuple(dict.fromkeys(int(s) for s in seeds.split(",") if s.strip()))
    except ValueError:
        raise _fail(f"--seeds {seeds!r}: expected a comma list of integers, e.g. 0,1,2") from None
    if not seed_list:
        raise _fail("--seeds: at least one seed")
    bad = [b for b in baselines.split(",") if b.strip() and b.strip() not in ("eager", "compile")]
    if bad:
        raise _fail(f"--baselines: unknown baseline(s) {', '.join(bad)}; use eager, compile or both")
    if workers is not None and workers < 1:
        raise _fail("--workers must be at least 1")
    try:
        base = RunContext.from_env(model=model, base_url=base_url, coder=coder, backend=backend, size=size,
                                   max_repairs=max_repairs, chroma_url=chroma_url,
                                   baselines=tuple(b.strip() for b in baselines.split(",") if b.strip()))
        tasks = resolve_suite(suite, levels, task_filter, limit)
    except (ConfigError, SuiteError) as exc:
        raise _fail(str(exc)) from exc
    if base.coder_kind == "llm" and not base.model:
        raise _fail("the LLM coder needs --model (or HTAM_MODEL)")

    if check_only:
        raise typer.Exit(_check_tasks(tasks, base.backend, base.size))

    from htam_agent.bench.driver import BenchConfig, plan
    from htam_agent.bench.records import RecordStore

    coder_name = base.model if base.coder_kind == "llm" else "exemplar"
    bench_dir = out or Path("htam-bench") / f"{_suite_slug(suite)}-{base.backend}-{re.sub(r'[^A-Za-z0-9._-]+', '_', coder_name)}"
    config = BenchConfig(suite=suite, bench_dir=str(bench_dir), methods=[m.name for m in chosen], base=base,
                         budget=budget, seeds=seed_list, levels=levels, task_filter=task_filter, limit=limit,
                         workers=workers)
    units = plan(config, tasks)
    store = RecordStore(config.bench_dir)
    done = store.done_keys()

    if show_plan:
        typer.echo(f"{len(tasks)} tasks x {len(chosen)} methods x {len(seed_list)} seeds = {len(units)} runs "
                   f"({sum(u.key in done for u in units)} already done) in {config.bench_dir}")
        seen = set()
        for u in units:
            if u.method.name in seen:
                continue
            seen.add(u.method.name)
            c = u.ctx
            typer.echo(f"  {u.method.name:<22} steps={c.steps} candidates={c.candidates} max_repairs={c.max_repairs} "
                       f"memory={c.memory_mode} policy={c.direction_policy} strategies={c.use_strategies} "
                       f"transitions={c.use_transitions} -> at most {max_evaluations(c)} evaluations per task"
                       + (f" (memory: htam memory --namespace {c.memory_namespace})" if c.chroma_url else ""))
        raise typer.Exit(0)

    if not report_only:
        todo = sum(u.key not in done for u in units)
        who = f"LLM {base.model}" if base.coder_kind == "llm" else "exemplar coder (no LLM)"
        typer.echo(f"bench: {len(units)} runs ({len(units) - todo} done already), {who}, backend {base.backend}, "
                   f"budget {budget} evaluations per task, folder {config.bench_dir}", err=True)
        try:
            if ray:
                from htam_agent.bench.ray_driver import run_bench_ray

                if not base.chroma_url and ray != "local":
                    typer.echo("note: without --chroma-url each Ray host keeps what the methods learn in its own "
                               f"copy of {config.bench_dir}/memory; give a Chroma server to share it", err=True)

                outcome = run_bench_ray(config, ray, units=units)
            else:
                from htam_agent.bench.driver import run_bench

                outcome = run_bench(config, units=units)
        except KeyboardInterrupt:
            typer.echo("interrupted: finished runs are recorded; run the same command again to continue", err=True)
            raise typer.Exit(130) from None
        typer.echo(f"ran {outcome.ran}, skipped {outcome.skipped} finished, {outcome.errors} harness error(s)"
                   + (f", {outcome.unloadable} run(s) of task files that could not load" if outcome.unloadable
                      else ""), err=True)

    records = store.select([u.key for u in units])
    if report_only and not records:
        raise _fail(f"{config.bench_dir}: no records for this selection; run the bench first")
    if not no_report and records:
        from htam_agent.bench.comparison_report import write_report

        notes = []
        if "one-shot" in config.methods:
            notes.append("one-shot uses 1 evaluation per task whatever the budget: it is the no-search baseline.")
        missing = len(units) - len(records)
        if missing:
            notes.append(f"{missing} of {len(units)} planned runs have no record yet (the report covers the rest).")
        paths = write_report(records, Path(config.bench_dir) / "report", title=f"htam bench: {_suite_slug(suite)}",
                             notes=notes)
        typer.echo(f"report: {paths['md']}  {paths['html']}")
    unloadable = {r["task"]: r.get("error", "") for r in records if r.get("status") == "unloadable"}
    if unloadable:
        typer.echo(f"{len(unloadable)} task(s) could not load (not run; fix the file and run the same command "
                   "again to run them):", err=True)
        for task, reason in unloadable.items():
            typer.echo(f"  {task}: {reason.splitlines()[0][:300] if reason else '?'}", err=True)
    errors = sum(r.get("status") == "error" for r in records)
    raise typer.Exit(1 if errors else 0)


def _check_tasks(tasks: list, backend: str, size: str | None) -> int:
    """`--check`: one line per task (ok, with a note, or why it cannot load); 1 if any cannot load."""
    import time

    from htam_agent.bench.driver import TaskCheck

    check = TaskCheck(backend, size)
    bad = 0
    t0 = time.time()
    for task in tasks:
        problem, note = check(task)
        bad += problem is not None
        state = f"could not load: {problem}" if problem else ("ok" + (f" ({note})" if note else ""))
        typer.echo(f"{task.id}  [{task.category}]  {state}")
    typer.echo(f"{len(tasks)} task(s): {len(tasks) - bad} load, {bad} cannot (backend {backend}, checked in "
               f"{time.time() - t0:.1f} s)", err=True)
    return 1 if bad else 0

