"""`htam tasks ...`: the bundled suite (`list`) and the sizes the evaluator uses for any task file (`sizes`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from htam_agent.backend_registry import BACKENDS

console = Console(stderr=True)
tasks_app = typer.Typer(help="The bundled task suite.", no_args_is_help=True)


@tasks_app.command("list")
def tasks_list() -> None:
    """The bundled problems and how many honest candidates each has per backend."""
    from htam_agent.bundled_tasks import candidate_files, suite_files

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
