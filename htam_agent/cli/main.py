"""The `htam` command. Sub-apps live beside the code they drive; this module only assembles them.

Heavy imports (torch, Chroma) happen inside the commands, so `htam --help` is instant.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from htam_agent.backend_registry import BACKENDS

app = typer.Typer(name="htam", help="Make GPU kernels faster with an LLM and a memory that learns (HTAM).",
                  no_args_is_help=True, add_completion=False)
verdicts_app = typer.Typer(help="The content-addressed verdict store (import GPU verdicts made elsewhere).",
                           no_args_is_help=True)
tasks_app = typer.Typer(help="The bundled task suite.", no_args_is_help=True)
app.add_typer(verdicts_app, name="verdicts")
app.add_typer(tasks_app, name="tasks")

console = Console(stderr=True)
STATUS_STYLE = {"accepted": "bold green", "incorrect": "bold red", "rejected": "bold magenta"}


def _mount_memory() -> None:
    try:
        from htam_agent.memory.cli import app as memory_app
    except ImportError as exc:  # the memory extra is part of the default install; say what is missing
        missing = typer.Typer(help=f"(unavailable: {exc})")
        app.add_typer(missing, name="memory")
        return
    app.add_typer(memory_app, name="memory")


_mount_memory()


def _mount_optimize() -> None:
    from htam_agent.cli.optimize import optimize_cmd

    app.command("optimize")(optimize_cmd)


_mount_optimize()


def _mount_bench() -> None:
    from htam_agent.bench.cli import bench_command

    app.command("bench")(bench_command)  # a single command: `htam bench SUITE` (add_typer would nest it)


_mount_bench()


def _mount_exemplar() -> None:
    from htam_agent.coder.exemplar_cli import app as exemplar_app

    app.add_typer(exemplar_app, name="exemplar")


_mount_exemplar()


def _mount_chat() -> None:
    from htam_agent.cli.chat import chat_cmd, ui_cmd

    app.command("chat")(chat_cmd)
    app.command("ui")(ui_cmd)


_mount_chat()


def _with_eval_options(fn: Callable[..., None]) -> Callable[..., None]:
    """Give a typer command the evaluator's shared options (htam_agent/evaluation/options.py, also behind
    `python -m htam_agent.evaluation`): they join fn's own parameters in the signature typer reads, and fn gets
    their values as one dict, `options` (choices as plain strings)."""
    from htam_agent.evaluation.options import EVAL_OPTIONS

    shared = []
    for o in EVAL_OPTIONS:
        kind: Any = o.type
        default = o.default
        if o.choices:  # an Enum: typer shows and checks the choices (any typer version)
            kind = Enum(o.dest.title().replace("_", ""), {c: c for c in o.choices}, type=str)
            default = None if default is None else kind(default)
        if default is None:
            kind = kind | None
        shared.append(inspect.Parameter(o.dest, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=Annotated[kind, typer.Option(o.flag, help=o.help)]))
    own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.name != "options"]

    def command(**kwargs: Any) -> None:
        options = {o.dest: kwargs.pop(o.dest, o.default) for o in EVAL_OPTIONS}
        options = {k: v.value if isinstance(v, Enum) else v for k, v in options.items()}
        return fn(**kwargs, options=options)

    command.__name__, command.__doc__ = fn.__name__, fn.__doc__
    command.__signature__ = inspect.Signature([*own, *shared])  # type: ignore[attr-defined]
    return command


@app.command("eval")
@_with_eval_options
def eval_cmd(
    task: Annotated[Path, typer.Argument(help="KernelBench-format task file (Model, get_inputs, get_init_inputs)")],
    candidate: Annotated[Path, typer.Argument(help="candidate file defining ModelNew")],
    as_json: Annotated[bool, typer.Option("--json", help="print the verdict as JSON")] = False,
    options: dict[str, Any] | None = None,  # the shared options, by dest (_with_eval_options)
) -> None:
    """Compile, verify and time CANDIDATE against TASK; exit status 0 only when it is accepted."""
    from htam_agent.evaluation.backends import BACKEND_NAMES, detect_backend
    from htam_agent.evaluation.gateway import EvaluationGateway
    from htam_agent.evaluation.options import eval_options, verdict_store
    from htam_agent.evaluation.readout import Readout
    from htam_agent.evaluation.runner import Candidate, Evaluator
    from htam_agent.evaluation.tasks import TaskError, load_task

    assert options is not None  # filled by _with_eval_options
    for path, what in ((task, "task"), (candidate, "candidate")):
        if not path.is_file():
            console.print(f"[red]error:[/] {path}: no such {what} file")
            raise typer.Exit(2)
    try:
        load_task(task, size="default")
    except TaskError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    source = candidate.read_text()
    backend = options["backend"] or detect_backend(source)
    if backend not in BACKEND_NAMES:
        console.print(f"[red]error:[/] {candidate}: cannot tell the backend"
                      f"{'' if backend is None else f' ({backend!r} is not one)'}; pass --backend "
                      + "|".join(BACKEND_NAMES))
        raise typer.Exit(2)
    evaluator = Evaluator(eval_options(options, backend), verdict_store(options))
    with console.status(f"evaluating {candidate.name} on {backend} (compile, verify, time)..."):
        gateway = EvaluationGateway(evaluator, mode="local")  # asked to evaluate: never replay
        verdict = gateway.benchmark(Candidate(task_path=str(task), source=source))
    if as_json:
        sys.stdout.write(json.dumps(verdict, indent=1, default=str) + "\n")
    else:
        style = STATUS_STYLE.get(Readout(verdict).status, "bold yellow")
        console.print(f"[{style}]{Readout(verdict).status.upper()}[/]")
        typer.echo(Readout(verdict).text())
    raise typer.Exit(0 if Readout(verdict).accepted else 1)


@verdicts_app.command("import")
def verdicts_import(file: Annotated[Path, typer.Argument(help="verdicts.jsonl from `python -m htam_agent.evaluation batch`")]) -> None:
    """Import verdicts made on another host (e.g. a GPU host) into the local store."""
    from htam_agent.evaluation.store import StoreError, VerdictStore

    store = VerdictStore()
    try:
        n = store.import_jsonl(file)
    except StoreError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    typer.echo(f"imported {n} verdicts into {store.root}")


@verdicts_app.command("export")
def verdicts_export(file: Path) -> None:
    """Write every stored verdict to a JSON-lines file."""
    from htam_agent.evaluation.store import VerdictStore

    store = VerdictStore()
    typer.echo(f"exported {store.export_jsonl(file)} verdicts from {store.root}")


@verdicts_app.command("list")
def verdicts_list(task: Annotated[str | None, typer.Option(help="only this task")] = None) -> None:
    """One line per stored verdict: task, backend, device, status, speedup."""
    from htam_agent.evaluation.readout import Readout
    from htam_agent.evaluation.store import VerdictStore

    for v in VerdictStore():
        if task and Readout(v).task != task:
            continue
        typer.echo(Readout(v).store_line())


@tasks_app.command("list")
def tasks_list() -> None:
    """The bundled problems and how many honest candidates each has per backend."""
    from htam_agent.tasks import candidate_files, suite_files

    for p in suite_files():
        counts = {b: len(candidate_files(p.stem, b)) for b in BACKENDS}
        extra = "  ".join(f"{b}:{n}" for b, n in counts.items() if n)
        typer.echo(f"{p.stem:<36} {extra}")


@tasks_app.command("sizes")
def tasks_sizes(
    files: Annotated[list[Path], typer.Argument(help="KernelBench-format task files", exists=True, dir_okay=False)],
    refresh: Annotated[bool, typer.Option("--refresh", help="derive again instead of reading the cache")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object per file")] = False,
) -> None:
    """Each size of each file (default, small, alt): the globals it sets, the input shapes, and why it was
    chosen, or why there is none. Sizes a file has no SMALL_SIZES/ALT_SIZES dict for are derived (cached)."""
    from htam_agent.evaluation.tasks import TaskError, describe_sizes

    failed = False
    for f in files:
        try:
            info = describe_sizes(f, refresh=refresh)
        except TaskError as exc:
            console.print(f"[red]{exc}[/red]")
            failed = True
            continue
        if as_json:
            typer.echo(json.dumps(info))
            continue
        typer.echo(f"{info['path']}")
        if "size_globals" in info:
            sg = ", ".join(f"{g['global']}={g['default']} (floor {g['floor']})" for g in info["size_globals"])
            typer.echo(f"  size globals: {sg or 'none'}")
            for name, why in info["kept_globals"].items():
                typer.echo(f"  kept: {name}: {why}")
        for size, e in info["sizes"].items():
            if "problem" in e:
                typer.echo(f"  {size:<8} none: {e['problem']}")
                failed = failed or size == "small"
                continue
            glob = " ".join(f"{k}={v}" for k, v in (e.get("globals") or {}).items())
            rec = " ".join(f"{k}={v}" for k, v in (e.get("recomputed") or {}).items())
            inputs = ", ".join(e.get("inputs", [])) or e.get("inputs_error", "")
            cost = "".join([f"  est {e['est_ms']:.1f} ms" if e.get("est_ms") is not None else "",
                            f"  cpu {e['cpu_ms']:.1f} ms (2 threads, wall)" if e.get("cpu_ms") is not None else "",
                            f" / {e['cpu1_ms']:.1f} ms (1 thread, CPU time)" if e.get("cpu1_ms") is not None else "",
                            f"  cpu error: {e['cpu_error']}" if e.get("cpu_error") else ""])
            typer.echo(f"  {size:<8} {e['from']}{': ' + glob if glob else ''}{'  (recomputed: ' + rec + ')' if rec else ''}")
            typer.echo(f"           inputs {inputs}{cost}")
            if e.get("why"):
                typer.echo(f"           why: {e['why']}")
    if failed:
        raise typer.Exit(1)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
