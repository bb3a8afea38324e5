"""`htam eval` (one candidate through the evaluator) and `htam verdicts ...` (the verdict store).

The evaluator's options come from one table, `htam_agent/evaluation/options.py`'s `EVAL_OPTIONS`, which also
builds `python -m htam_agent.evaluation`'s argparse: that command runs on bare GPU hosts without typer, so the
table, not this module, is where an evaluator option is added.
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

console = Console(stderr=True)
STATUS_STYLE = {"accepted": "bold green", "incorrect": "bold red", "rejected": "bold magenta"}
verdicts_app = typer.Typer(help="The content-addressed verdict store (import GPU verdicts made elsewhere).",
                           no_args_is_help=True)


def _with_eval_options(fn: Callable[..., None]) -> Callable[..., None]:
    """Give a typer command the evaluator's shared options (htam_agent/evaluation/options.py, also behind
    `python -m htam_agent.evaluation`): they join fn's own parameters in the signature typer reads, and fn gets
    their values as one dict, `options` (choices as plain strings)."""
    from htam_agent.evaluation.parent.options import EVAL_OPTIONS

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


@_with_eval_options
def eval_cmd(
    task: Annotated[Path, typer.Argument(help="KernelBench-format task file (Model, get_inputs, get_init_inputs)")],
    candidate: Annotated[Path, typer.Argument(help="candidate file defining ModelNew")],
    as_json: Annotated[bool, typer.Option("--json", help="print the verdict as JSON")] = False,
    options: dict[str, Any] | None = None,  # the shared options, by dest (_with_eval_options)
) -> None:
    """Compile, verify and time CANDIDATE against TASK; exit status 0 only when it is accepted."""
    from htam_agent.evaluation.backends import BACKEND_NAMES, detect_backend
    from htam_agent.evaluation.parent.candidate import Candidate
    from htam_agent.evaluation.parent.evaluator import Evaluator
    from htam_agent.evaluation.parent.gateway import EvaluationGateway
    from htam_agent.evaluation.parent.options import eval_options, verdict_store
    from htam_agent.evaluation.parent.pool import start_early
    from htam_agent.evaluation.parent.readout import Readout
    from htam_agent.evaluation.tasks import TaskError, load_task

    assert options is not None  # filled by _with_eval_options
    for path, what in ((task, "task"), (candidate, "candidate")):
        if not path.is_file():
            console.print(f"[red]error:[/] {path}: no such {what} file")
            raise typer.Exit(2)
    start_early()  # the checker's imports run beside this process's own (the task's check, sizes, footprint)
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
        verdict = gateway.benchmark(Candidate.of(task, source))
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
    from htam_agent.evaluation.parent.store import StoreError, VerdictStore

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
    from htam_agent.evaluation.parent.store import VerdictStore

    store = VerdictStore()
    typer.echo(f"exported {store.export_jsonl(file)} verdicts from {store.root}")


@verdicts_app.command("list")
def verdicts_list(task: Annotated[str | None, typer.Option(help="only this task")] = None) -> None:
    """One line per stored verdict: task, backend, device, status, speedup."""
    from htam_agent.evaluation.parent.readout import Readout
    from htam_agent.evaluation.parent.store import VerdictStore

    for v in VerdictStore():
        if task and Readout(v).task != task:
            continue
        typer.echo(Readout(v).store_line())
