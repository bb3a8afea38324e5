"""`htam memory ...`: look at, draw, export, import and reset the memory.

A typer app named ``app``; `cli/main.py` mounts it as `htam memory`. What it drives lives in `htam_agent/memory/`.
Only `import`/`export`/`show`/`graph` touch SQLite and the seed files; none loads the embedding model, except
`reset`, which also empties the Chroma collections.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.io import MemoryFormatError
from htam_agent.memory.schema import BACKENDS, OP_CLASSES, EdgeStats
from htam_agent.memory.transitions import MemoryStoreError

app = typer.Typer(name="memory", help="Inspect and manage the HTAM memory (directions, transitions, strategies).",
                  no_args_is_help=True, add_completion=False)
console = Console()

_DIR_HELP = "Memory directory (default: $HTAM_MEMORY_DIR or the per-user data directory)."


@app.callback()
def _options(
    ctx: typer.Context,
    data_dir: Annotated[Path | None, typer.Option("--dir", help=_DIR_HELP, envvar="HTAM_MEMORY_DIR")] = None,
    chroma_url: Annotated[str | None, typer.Option("--chroma-url", help="Chroma server URL (shared memory).",
                                                   envvar="HTAM_CHROMA_URL")] = None,
    namespace: Annotated[str | None, typer.Option(
        "--namespace", help="collection prefix on the server (a bench lane's: see its plan)",
        envvar="HTAM_MEMORY_NAMESPACE")] = None,
) -> None:
    obj = ctx.ensure_object(dict)
    obj["memory_config"] = MemoryConfig.from_env(data_dir, chroma_url, namespace)


def _open(ctx: typer.Context):  # noqa: ANN202 - returns HTAMemory (imported lazily)
    from htam_agent.memory.htam import HTAMemory

    cfg = (ctx.obj or {}).get("memory_config") or MemoryConfig.from_env()
    try:
        return HTAMemory(cfg)
    except MemoryStoreError as e:
        console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(1) from None


def _check_choice(value: str | None, allowed: tuple[str, ...], what: str) -> None:
    if value is not None and value not in allowed:
        raise typer.BadParameter(f"unknown {what} {value!r}; choose from {', '.join(allowed)}")


def _pct(x: float) -> str:
    return f"{x:.0%}"


def _gain(st: EdgeStats) -> str:
    if st.mean_gain is None:
        return "-"
    sd = f" ±{st.std_gain:.2f}" if st.std_gain is not None else ""
    return f"x{math.exp(st.mean_gain):.2f}{sd}"


@app.command()
def show(
    ctx: typer.Context,
    what: Annotated[str, typer.Option(help="directions, edges, strategies, learned or all")] = "all",
    backend: Annotated[str | None, typer.Option(help=", ".join(BACKENDS))] = None,
    direction: Annotated[str | None, typer.Option(help="a direction id")] = None,
    op_class: Annotated[str | None, typer.Option("--op-class", help="an operator class")] = None,
    limit: Annotated[int, typer.Option(help="rows per table")] = 40,
) -> None:
    """List directions, transition edges with statistics, and strategies (with filters)."""
    _check_choice(what, ("all", "directions", "edges", "strategies", "learned"), "table")
    _check_choice(backend, BACKENDS, "backend")
    _check_choice(op_class, OP_CLASSES, "operator class")
    mem = _open(ctx)
    try:
        if direction is not None and direction not in mem.directions:
            raise typer.BadParameter(f"unknown direction {direction!r}; choose from {', '.join(mem.directions)}")
        s = mem.stats()
        console.print(f"[bold]HTAM memory[/bold] {s['data_dir']}: {s['events']} recorded transitions, "
                      f"{s['directions']} directions, {s['strategies']} strategies")
        if "shared" in s:
            sh = s["shared"]
            state = f"[yellow]unreachable: {sh['last_error']}[/yellow]" if sh["last_error"] else "in step"
            console.print(f"shared through {sh['server']} (collection {sh['log']}): replica {sh['replica']}, "
                          f"{sh['pending']} write(s) not yet sent, {state}")
        if what in ("all", "directions"):
            t = Table(title="Directions (HTG level 1)")
            for col in ("id", "name", "prior" + (f" ({op_class})" if op_class else " (max)"), "bottlenecks",
                        "taken", "improved", "when it applies"):
                t.add_column(col, overflow="fold")
            taken: dict[str, EdgeStats] = {}
            for e in mem.edges(op_class=op_class, backend=backend):
                cur = taken.get(e.target, EdgeStats())
                taken[e.target] = EdgeStats(cur.n + e.stats.n, cur.improved + e.stats.improved)
            for d in mem.catalog.directions:
                if direction and d.id != direction:
                    continue
                st = taken.get(d.id, EdgeStats())
                prior = d.prior(op_class) if op_class else max(d.op_class_priors.values())
                t.add_row(d.id, d.name, f"{prior:.2f}", ", ".join(d.bottlenecks) or "any", f"{st.n:g}",
                          _pct(st.success_rate) if st.n else "-", d.applies_when)
            console.print(t)
        if what in ("all", "edges"):
            rows = mem.edges(op_class=op_class, backend=backend, direction=direction)
            t = Table(title=f"Transition edges ({len(rows)})")
            for col in ("from", "to", "n", "improved", "failed", "mean gain", "recent failures"):
                t.add_column(col, overflow="fold")
            for r in rows[:limit]:
                st = r.stats
                t.add_row(r.source, r.target, f"{st.n:g}", _pct(st.success_rate), _pct(st.failed / st.n),
                          _gain(st), " | ".join(r.recent_failures)[:160])
            console.print(t)
        if what in ("all", "strategies"):
            rows = mem.strategy_rows(op_class=op_class, backend=backend, direction=direction)
            t = Table(title=f"Strategies (HTG level 2): {len(rows)}")
            for col in ("id", "direction", "title", "backends", "used", "improved", "mean gain"):
                t.add_column(col, overflow="fold")
            for r in rows[:limit]:
                st = r.stats
                t.add_row(r.strategy.id, r.strategy.direction, r.strategy.title,
                          ",".join(r.strategy.applicability.backends), f"{st.n:g}",
                          _pct(st.success_rate) if st.n else "-", _gain(st))
            console.print(t)
        if what in ("all", "learned"):
            _learned_table(mem, backend, direction, op_class, limit)
    finally:
        mem.close()


def _learned_table(mem, backend: str | None, direction: str | None, op_class: str | None,  # noqa: ANN001
                   limit: int) -> None:
    """Strategy cards learned from accepted kernels, newest first, with the evidence they were learned from and
    how they fared since (uses in later steps)."""
    from htam_agent.memory.stats import key_mask

    cards = [c for c in mem.learned_cards()
             if (not direction or c.direction == direction) and (not backend or backend in c.applicability.backends)
             and (not op_class or op_class in c.applicability.op_set())]
    idx = mem.transitions.index()
    t = Table(title=f"Learned strategies (from accepted kernels): {len(cards)}")
    for col in ("id", "direction", "class / backend", "learned from", "gain then", "used since", "improved",
                "plan"):
        t.add_column(col, overflow="fold")
    for c in cards[:limit]:
        ev = c.evidence
        then = "-"
        if ev.get("speedup_after") is not None:
            before = ev.get("speedup_before")
            then = (f"{before:.2f}x -> " if isinstance(before, float) else "eager -> ") + f"{ev['speedup_after']:.2f}x"
        st = idx.strategy_total(c.id, key_mask())
        task = ev.get("task") or "-"
        step = f" step {ev['step']}" if ev.get("step") is not None else ""
        t.add_row(c.id, c.direction, f"{'/'.join(c.applicability.op_classes)} / {'/'.join(c.applicability.backends)}",
                  f"{task}{step}", then, f"{st.n:g}", _pct(st.success_rate) if st.n else "-",
                  c.description.split(": ", 1)[-1][:160])
    console.print(t)


@app.command()
def graph(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", help="image file (.png, .svg, .pdf)")],
    backend: Annotated[str | None, typer.Option(help="only transitions on this backend")] = None,
    op_class: Annotated[str | None, typer.Option("--op-class", help="only this operator class")] = None,
) -> None:
    """Draw the transition graph with edge weights."""
    _check_choice(backend, BACKENDS, "backend")
    _check_choice(op_class, OP_CLASSES, "operator class")
    from htam_agent.memory.htg_drawing import draw_htg

    mem = _open(ctx)
    try:
        edges = mem.edges(op_class=op_class, backend=backend)
        title = "HTAM transition graph" + "".join(f", {x}" for x in (op_class, backend) if x)
        path = draw_htg(mem.catalog.directions, edges, out, title=f"{title}: {sum(e.stats.n for e in edges):g} "
                                                                  "transitions")
    finally:
        mem.close()
    console.print(f"wrote {path} ({len(edges)} edges)")


@app.command("export")
def export_cmd(ctx: typer.Context, file: Annotated[Path, typer.Argument(help="output .json or .json.gz")]) -> None:
    """Write learned experience (events, learned strategies) to a versioned file."""
    mem = _open(ctx)
    try:
        n = mem.export(file)
    finally:
        mem.close()
    console.print(f"exported {n['events']} transitions and {n['learned_strategies']} learned strategies to {file}")


@app.command("import")
def import_cmd(ctx: typer.Context, file: Annotated[Path, typer.Argument(help="a file written by export")]) -> None:
    """Merge an exported memory into this one (counts add up; importing the same file twice adds nothing)."""
    mem = _open(ctx)
    try:
        rep = mem.import_file(file)
    except MemoryFormatError as e:
        console.print(f"[red]refused:[/red] {e}")
        raise typer.Exit(1) from None
    finally:
        mem.close()
    console.print(f"imported {rep.events_added} new transitions ({rep.events_already_present} already present) "
                  f"and {rep.learned_strategies} learned strategies from {file}")


@app.command()
def reset(ctx: typer.Context,
          yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False) -> None:
    """Forget all learned experience; the shipped directions and strategies stay.

    An unreadable memory database is set aside (renamed, never deleted) and a new one started.
    """
    from htam_agent.memory.htam import HTAMemory
    from htam_agent.memory.transitions import set_aside

    cfg = (ctx.obj or {}).get("memory_config") or MemoryConfig.from_env()
    try:
        mem = HTAMemory(cfg)
    except MemoryStoreError as e:
        console.print(f"[yellow]{e}[/yellow]")
        if not yes and not typer.confirm("Set the unreadable database aside and start a new memory?"):
            raise typer.Exit(1) from None
        console.print(f"kept the old database as {set_aside(cfg.transitions_path)}")
        mem = HTAMemory(cfg)
    try:
        n = mem.transitions.count()
        if not yes and not typer.confirm(f"Forget {n} recorded transitions in {mem.config.data_dir}?"):
            raise typer.Exit(1)
        mem.reset()
    finally:
        mem.close()
    console.print(f"memory reset: {n} transitions forgotten")
