"""`htam optimize`: one run of the agent with a live progress view, resumable, optionally with a person.

Kept apart from main.py so `htam --help` stays instant: LangGraph, Chroma and torch load only when the
command runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.prompt import Prompt
from rich.table import Table
from rich.text import Text

from htam_agent.backend_registry import choices

console = Console(stderr=True)


def _strategies_cell(ids: list[str]) -> str:
    """The strategies of a step in one short cell: the first and how many more (all of them are in report.md and
    the step's folder), so an 80-column table never wraps a strategy id over several lines."""
    if not ids:
        return "-"
    return ids[0] + (f" +{len(ids) - 1}" if len(ids) > 1 else "")


class ProgressView:
    """A table of steps that fills in as the graph's custom events arrive."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.rows: dict[int, dict[str, Any]] = {}
        self.best: float | None = None
        self.status = "starting"
        self.memory = ""  # where the memory's experience comes from (shipped, the user's own)

    def on_event(self, ev: dict[str, Any]) -> None:
        kind, step = ev.get("event"), ev.get("step")
        row = self.rows.setdefault(step, {"direction": "", "strategies": "", "cands": {}, "speedup": None}) \
            if step is not None else None
        if kind == "memory":
            self.memory = str(ev.get("line") or "")
        elif kind == "analyze" and row is not None:
            self.status = f"step {step}: {ev['op_class']} operator, {ev['bottleneck']}-bound, {ev['status']}"
        elif kind == "direction" and row is not None:
            row["direction"] = ev.get("direction") or "-"
        elif kind == "strategies" and row is not None:
            row["strategies"] = _strategies_cell(list(ev.get("strategies", [])))
        elif kind == "generate" and row is not None:
            row["cands"][(ev["variant"], ev["repair"])] = "generating"
            self.status = f"step {step}: generating candidate {ev['variant']} (repair {ev['repair']})"
        elif kind == "generated" and row is not None:
            state = "no code" if not ev.get("has_code") else (
                "compiled" if ev.get("compile") == "accepted" else (ev.get("compile") or "generated"))
            row["cands"][(ev["variant"], ev["repair"])] = state
        elif kind == "verdict" and row is not None:
            s = ev.get("speedup_vs_eager")
            row["cands"][(ev["variant"], ev["repair"])] = ev["status"] + (f" {s:.2f}x" if s else "")
            self.status = f"step {step}: {ev.get('reason', '')[:120]}"
        elif kind == "step_done" and row is not None:
            row["speedup"] = ev.get("speedup_vs_eager")
            self.best = ev.get("best_speedup")
        elif kind == "interrupt":
            self.status = f"step {step}: waiting for you"
        elif kind == "done":
            self.status = ev.get("headline", "done")

    def __rich__(self) -> Any:
        # 80 columns hold it without breaking a word: ids never wrap (a long strategy id ends in an ellipsis; all
        # of them are in report.md), the verdicts wrap between candidates
        t = Table(expand=True, show_lines=False, box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
        t.add_column("#", no_wrap=True)
        t.add_column("direction", no_wrap=True, min_width=22)  # the longest direction id, whole
        t.add_column("strategies", no_wrap=True, overflow="ellipsis", min_width=18, ratio=1)
        t.add_column("verdicts", overflow="fold", min_width=14, ratio=1)
        t.add_column("speedup", no_wrap=True)
        for step, row in sorted(self.rows.items()):
            cands = "\n".join(f"v{v}r{r} {s}" for (v, r), s in sorted(row["cands"].items()))
            sp = row["speedup"]
            t.add_row(str(step), row["direction"], row["strategies"], cands, f"{sp:.2f}x" if sp else "-")
        best = f"{self.best:.2f}x over eager" if self.best else "none yet"
        lines = [t, f"[bold]best so far:[/bold] {best}", f"[dim]{self.status}[/dim]"]
        if self.memory:
            lines.append(Text(self.memory, style="dim"))  # plain text: the line names files and commands
        return Panel(Group(*lines), title=self.title)


def ask_person(payload: dict[str, Any]) -> dict[str, Any]:
    """The review pause, in the terminal: accept, pick another direction, give a code file, or stop."""
    console.print(Panel(
        f"step {payload.get('step')}: direction [bold]{payload.get('direction')}[/bold]\n"
        f"why: {payload.get('reason', '')}\nstrategies: {', '.join(payload.get('strategies', [])) or '-'}\n"
        f"alternatives: {', '.join(a['id'] for a in payload.get('alternatives', []))}",
        title="review before generation"))
    while True:
        answer = Prompt.ask("[a]ccept, [d]irection ID, [c]ode FILE, [s]top", default="a", console=console).strip()
        head, _, rest = answer.partition(" ")
        if head in ("a", "accept"):
            return {"action": "accept"}
        if head in ("s", "stop"):
            return {"action": "stop"}
        if head in ("d", "direction") and rest.strip() in payload.get("directions", []):
            return {"action": "direction", "direction": rest.strip()}
        if head in ("c", "code") and Path(rest.strip()).expanduser().is_file():
            return {"action": "code", "code": Path(rest.strip()).expanduser().read_text()}
        console.print(f"[red]not understood[/red]; directions: {', '.join(payload.get('directions', []))}; "
                      "a code file must exist")


def optimize_cmd(
    task: Annotated[Path | None, typer.Argument(help="KernelBench task file (omit with --resume)")] = None,
    backend: Annotated[str | None, typer.Option(help=f"{choices()} (HTAM_BACKEND; default cuda)")] = None,
    steps: Annotated[int | None, typer.Option(help="evolution steps (HTAM_STEPS; default 6)")] = None,
    candidates: Annotated[int | None, typer.Option(help="candidates per step (HTAM_CANDIDATES; default 1)")] = None,
    model: Annotated[str | None, typer.Option(help="LLM model name (HTAM_MODEL); none: the offline coder")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint (HTAM_BASE_URL)")] = None,
    coder: Annotated[str | None, typer.Option(help="auto | llm | exemplar (HTAM_CODER)")] = None,
    size: Annotated[str | None, typer.Option(help="default | small | alt (HTAM_SIZE)")] = None,
    memory_dir: Annotated[str | None, typer.Option(help="memory folder (HTAM_MEMORY_DIR)")] = None,
    runs_dir: Annotated[str | None, typer.Option(help="where run folders go (HTAM_RUNS_DIR)")] = None,
    max_repairs: Annotated[int | None, typer.Option(help="repairs per failed candidate (HTAM_MAX_REPAIRS)")] = None,
    target_speedup: Annotated[float | None, typer.Option(help="stop at this speedup over eager")] = None,
    resume: Annotated[str | None, typer.Option("--resume", help="continue the run with this id")] = None,
    interactive: Annotated[bool, typer.Option("--interactive", help="pause before each generation")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON on stdout")] = False,
) -> None:
    """Search for a faster kernel for TASK, step by step, guided by the HTAM memory."""
    from htam_agent.agent import RunInterrupted, run_optimization
    from htam_agent.context import ConfigError, RunContext
    from htam_agent.run.artifacts import RunArtifacts

    overrides = dict(backend=backend, steps=steps, candidates=candidates, model=model, base_url=base_url,
                     coder=coder, size=size, memory_dir=memory_dir, runs_dir=runs_dir, max_repairs=max_repairs,
                     target_speedup=target_speedup)
    try:
        if resume:
            base = RunContext.from_env(runs_dir=runs_dir)
            info = RunArtifacts(base.runs_path(), resume).read_run()
            ctx = RunContext.from_dict({**info["context"], "interactive": interactive})
            task_path = Path(info["task_path"])
        else:
            if task is None:
                raise typer.BadParameter("give a TASK file, or --resume RUN_ID")
            if not task.is_file():
                raise typer.BadParameter(f"{task}: no such task file")
            ctx = RunContext.from_env(interactive=interactive, **overrides)
            task_path = task
    except (ConfigError, FileNotFoundError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    if ctx.coder_kind == "exemplar":
        console.print("[yellow]No LLM configured: the offline exemplar coder writes the kernels (no LLM is "
                      "used).[/yellow] Set HTAM_MODEL / --model (and HTAM_BASE_URL / --base-url, OPENAI_API_KEY) "
                      "to use one.")
    from htam_agent.run.artifacts import new_run_id

    run_id = resume or new_run_id(task_path.stem)
    view = ProgressView(f"htam optimize {task_path.stem} (run {run_id}): {ctx.describe()}")
    try:
        with Live(view, console=console, refresh_per_second=4, transient=False) as live:
            def handler(payload: dict[str, Any]) -> Any:
                live.stop()
                try:
                    return ask_person(payload)
                finally:
                    live.start()

            result = run_optimization(task_path, ctx, run_id=run_id, resume=bool(resume),
                                      on_event=view.on_event, on_interrupt=handler if interactive else None)
    except RunInterrupted as exc:
        console.print(f"[yellow]{exc}[/yellow]")
        raise typer.Exit(3) from None
    except Exception as exc:  # noqa: BLE001 - a clear one-line error; the run folder keeps the state
        console.print(f"[red]error:[/red] {type(exc).__name__}: {exc}")
        console.print(f"the run's state is saved: fix the cause and continue with `htam optimize --resume {run_id}`")
        raise typer.Exit(1) from None
    console.print(f"[bold]{result.headline()}[/bold]")
    console.print(f"artifacts: {result.artifact_dir}  (report.md, best_kernel.py)")
    if not result.uses_llm:
        console.print("(no LLM was used in this run)")
    if as_json:
        print(json.dumps(result.as_dict(), indent=2, default=str))
    raise typer.Exit(0 if result.correct else 1)
