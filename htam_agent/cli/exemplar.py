"""`htam exemplar ...`: list and write the offline exemplar candidates of tasks (no LLM needed).

`write` lays files out as OUT/<task stem>/<backend>_exNN_<variant>.py, the layout the evaluator's batch reads
(`python -m htam_agent.evaluation batch --tasks htam_agent/bundled_tasks/suite --candidates OUT --backend cuda`), and
also writes OUT/pairs.json for `batch --pairs` and OUT/manifest.jsonl (task, backend, variant, knobs, file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from htam_agent.backend_registry import BACKENDS, UnknownBackend, choices
from htam_agent.backend_registry import spec as backend_spec

app = typer.Typer(help="Offline exemplar candidates (no LLM): list and write them for the evaluator.",
                  no_args_is_help=True)

def _task_path(task: str) -> Path:
    from htam_agent.bundled_tasks import SUITE_DIR

    p = Path(task)
    if p.is_file():
        return p
    q = SUITE_DIR / (task if task.endswith(".py") else f"{task}.py")
    if q.is_file():
        return q
    raise typer.BadParameter(f"{task}: neither a file nor a bundled suite task (see `htam tasks list`)")


def _backends(option: str) -> list[str]:
    """The backends named by --backend: one, a comma list, or 'all'; an unknown one gets the registry's message."""
    names = list(BACKENDS) if option == "all" else [b.strip() for b in option.split(",") if b.strip()]
    if not names:
        raise typer.BadParameter(f"name a backend: one of {', '.join(BACKENDS)}, a comma list, or 'all'")
    for name in names:
        try:
            backend_spec(name)
        except UnknownBackend as exc:
            raise typer.BadParameter(f"{exc} (or a comma list of them, or 'all')") from None
    return names


@app.command("list")
def list_cmd(
    task: Annotated[str, typer.Argument(help="task file, or the stem of a bundled suite task")],
    backend: Annotated[str, typer.Option(help=f"{choices()}, a comma list, or all")] = "all",
) -> None:
    """Print the task's recognised family and every candidate variant with its knobs."""
    from htam_agent.coder.base import UnsupportedTask
    from htam_agent.coder.exemplar.enumerate import variants
    from htam_agent.coder.exemplar.patterns import recognize

    path = _task_path(task)
    try:
        pattern = recognize(path.read_text(), path.stem)
    except UnsupportedTask as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from exc
    typer.echo(f"{path.stem}: family {pattern.family} ({pattern.op_class}): {pattern.description}")
    for b in _backends(backend):
        for i, (vid, knobs, _) in enumerate(variants(pattern, b)):
            typer.echo(f"  {b:6s} ex{i:02d}  {vid:60s} {json.dumps(knobs, sort_keys=True)}")


@app.command("write")
def write_cmd(
    tasks: Annotated[list[str] | None, typer.Argument(help="task files or suite stems")] = None,
    backend: Annotated[str, typer.Option(help=f"{choices()}, a comma list, or all")] = "all",
    out: Annotated[Path, typer.Option(help="output folder")] = Path("exemplars"),
    suite: Annotated[bool, typer.Option("--suite", help="every bundled suite task (unsupported ones skipped)")] = False,
) -> None:
    """Write every candidate file plus manifest.jsonl and pairs.json, ready for the evaluator's batch."""
    from htam_agent.bundled_tasks import suite_files
    from htam_agent.coder.base import UnsupportedTask
    from htam_agent.coder.exemplar.enumerate import variants
    from htam_agent.coder.exemplar.patterns import recognize

    paths = [_task_path(t) for t in tasks or []] + (suite_files() if suite else [])
    if not paths:
        raise typer.BadParameter("name at least one task, or pass --suite")
    out.mkdir(parents=True, exist_ok=True)
    manifest, pairs, skipped = [], [], []
    for path in paths:
        try:
            pattern = recognize(path.read_text(), path.stem)  # the reference read once, for every backend
        except UnsupportedTask as exc:
            skipped.append(f"{path.stem}: {str(exc).split('. The offline')[0]}")
            continue
        for b in _backends(backend):
            try:
                cands = variants(pattern, b)
            except UnsupportedTask as exc:
                skipped.append(f"{path.stem}: {str(exc).split('. The offline')[0]}")
                break
            folder = out / path.stem
            folder.mkdir(exist_ok=True)
            for i, (vid, knobs, code) in enumerate(cands):
                file = folder / backend_spec(b).candidate_file(f"ex{i:02d}_{vid}")
                file.write_text(code)
                manifest.append({"task": str(path.resolve()), "task_name": path.stem, "backend": b, "variant": vid,
                                 "index": i, "knobs": knobs, "file": str(file.resolve())})
                pairs.append({"task": str(path.resolve()), "candidate": str(file.resolve())})
    (out / "manifest.jsonl").write_text("".join(json.dumps(m, sort_keys=True) + "\n" for m in manifest))
    (out / "pairs.json").write_text(json.dumps(pairs, indent=1))
    for s in skipped:
        typer.echo(f"skipped {s}", err=True)
    typer.echo(f"wrote {len(manifest)} candidates for {len({m['task'] for m in manifest})} tasks to {out}")
    typer.echo(f"evaluate: python -m htam_agent.evaluation batch --pairs {out / 'pairs.json'} --out verdicts.jsonl")
