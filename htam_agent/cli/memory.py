"""`htam memory ...`: look at, draw, export, import and reset the memory.

A typer app named ``app``; `cli/main.py` mounts it as `htam memory`. What it drives lives in `htam_agent/memory/`.
`htam memory` alone says where the experience came from: shipped with the package (memory/shipped.py) or the
user's own steps. Only `import`/`export`/`show`/`graph` touch SQLite and the seed files; none loads the embedding
model, except `reset` (and `load-shipped` replacing an earlier shipped file), which also empties the Chroma
collections.
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

app = typer.Typer(name="memory", help="Inspect and manage the HTAM memory (directions, transitions, strategies). "
                  "Alone: where its experience came from (shipped with the package, your own).",
                  invoke_without_command=True, add_completion=False)
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
    if ctx.invoked_subcommand is None:
        mem = _open(ctx)
        try:
            _print_origins(mem)
        finally:
            mem.close()
        console.print("commands: show, graph, export, import, load-shipped, reset (htam memory --help)")


def _n(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _print_origins(mem) -> None:  # noqa: ANN001 - HTAMemory (imported lazily)
    """Where the experience came from: per origin (shipped with the package, your own) and backend."""
    from htam_agent.memory import shipped

    o = shipped.origins(mem)
    console.print(f"[bold]HTAM memory[/bold] {mem.config.data_dir}")
    for origin, label in (("shipped", "shipped with htam-agent"), ("own", "your own steps and imports")):
        per = o["events"][origin]
        total = sum(per.values())
        where = ", ".join(f"{b} {n}" for b, n in per.items())
        cards = o["learned_strategies"][origin]
        console.print(f"  {label}: {_n(total, 'transition')}" + (f" ({where})" if where else "")
                      + f", {_n(cards, 'learned strategy card')}")
    for backend, info in o["loaded"].items():
        console.print(f"  shipped {backend} experience: {info.get('source')} ({info.get('events')} transitions "
                      "as shipped)")
    if o["shipped_off"]:
        console.print("  shipped experience is turned off (`htam memory load-shipped` brings it back)")
    elif o["ships_for"]:
        console.print(f"  this package ships experience for: {', '.join(o['ships_for'])} (loaded by a run on that "
                      "backend while you have no steps of your own there)")


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
        per = mem.transitions.origin_counts()
        shipped_n = sum(n for (o, _b), n in per.items() if o == "shipped")
        console.print(f"[bold]HTAM memory[/bold] {s['data_dir']}: {s['events']} recorded transitions "
                      f"({shipped_n} shipped, {s['events'] - shipped_n} your own), {s['directions']} directions, "
                      f"{s['strategies']} strategies")
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
            from htam_agent.memory.shipped import shipped_edge_counts

            of_shipped = shipped_edge_counts(mem, op_class=op_class, backend=backend)
            t = Table(title=f"Transition edges ({len(rows)})")
            for col in ("from", "to", "n", "shipped", "improved", "failed", "mean gain", "recent failures"):
                t.add_column(col, overflow="fold")
            for r in rows[:limit]:
                st = r.stats
                t.add_row(r.source, r.target, f"{st.n:g}", str(of_shipped.get((r.source, r.target), 0)),
                          _pct(st.success_rate), _pct(st.failed / st.n), _gain(st),
                          " | ".join(r.recent_failures)[:160])
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
    from htam_agent.memory.transitions import origin_of

    cards = [c for c in mem.learned_cards()
             if (not direction or c.direction == direction) and (not backend or backend in c.applicability.backends)
             and (not op_class or op_class in c.applicability.op_set())]
    idx = mem.transitions.index()
    t = Table(title=f"Learned strategies (from accepted kernels): {len(cards)}")
    for col in ("id", "origin", "direction", "class / backend", "learned from", "gain then", "used since",
                "improved", "plan"):
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
        origin = f"shipped ({ev.get('shipped_from')})" if origin_of(c.id) == "shipped" else "own"
        t.add_row(c.id, origin, c.direction, f"{'/'.join(c.applicability.op_classes)} / {'/'.join(c.applicability.backends)}",
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


@app.command("load-shipped")
def load_shipped(ctx: typer.Context,
                 backend: Annotated[str | None, typer.Option(help="one backend (default: every one that ships)")]
                 = None) -> None:
    """Load the experience shipped with htam-agent (replacing an earlier shipped version; your own steps stay) and
    turn shipped loading back on after `reset --shipped`."""
    from htam_agent.memory import shipped

    _check_choice(backend, BACKENDS, "backend")
    mem = _open(ctx)
    try:
        wanted = [backend] if backend else [b for b in BACKENDS if shipped.shipped_path(b)]
        if not wanted:
            console.print("this htam-agent ships no experience")
        for b in wanted:
            try:
                rep = shipped.load(mem, b)
            except (MemoryFormatError, MemoryStoreError) as e:
                console.print(f"[red]refused:[/red] {e}")
                raise typer.Exit(1) from None
            if rep is None:
                console.print(f"no experience ships for {b}")
            else:
                console.print(f"{b}: {rep.events_added} shipped transitions and {rep.learned_added} strategy cards "
                              f"from {rep.source}" + (f" (replacing {rep.events_replaced})" if rep.events_replaced
                                                      else ""))
    finally:
        mem.close()


@app.command()
def reset(ctx: typer.Context,
          shipped_only: Annotated[bool, typer.Option(
              "--shipped", help="forget only the shipped experience, and do not load it again (your own stays)")]
          = False,
          own_only: Annotated[bool, typer.Option(
              "--own", help="forget only your own experience (the shipped experience stays)")] = False,
          yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")] = False) -> None:
    """Forget learned experience; the seed directions and strategies stay.

    Alone: forget everything learned, your own and the shipped experience; the next run loads the shipped
    experience again, as on a fresh install. --shipped: forget only what shipped with htam-agent and keep it off
    (`htam memory load-shipped` brings it back). --own: forget only your own steps and imports.
    An unreadable memory database is set aside (renamed, never deleted) and a new one started.
    """
    from htam_agent.memory import shipped
    from htam_agent.memory.htam import HTAMemory
    from htam_agent.memory.transitions import set_aside

    if shipped_only and own_only:
        raise typer.BadParameter("--shipped and --own together forget everything: give neither")
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
        per = mem.transitions.origin_counts()
        n_shipped = sum(n for (o, _b), n in per.items() if o == "shipped")
        n_own = sum(n for (o, _b), n in per.items() if o == "own")
        what = ("shipped" if shipped_only else "own" if own_only else "all")
        n = {"shipped": n_shipped, "own": n_own, "all": n_shipped + n_own}[what]
        ask = {"shipped": f"Forget the {n} shipped transitions (your {n_own} own stay) and keep them off",
               "own": f"Forget your {n} own transitions (the {n_shipped} shipped stay)",
               "all": f"Forget {n} recorded transitions ({n_own} your own, {n_shipped} shipped)"}[what]
        if not yes and not typer.confirm(f"{ask} in {mem.config.data_dir}?"):
            raise typer.Exit(1)
        try:
            if shipped_only:
                events, cards = shipped.drop(mem)
                console.print(f"memory reset: {events} shipped transitions and {cards} shipped strategy cards "
                              f"forgotten, {n_own} of your own kept; shipped experience is off "
                              "(`htam memory load-shipped` brings it back)")
            elif own_only:
                events, cards = mem.forget("own")
                console.print(f"memory reset: {events} of your own transitions and {cards} strategy cards "
                              f"forgotten, {n_shipped} shipped kept")
            else:
                mem.reset()
                console.print(f"memory reset: {n} transitions forgotten ({n_own} your own, {n_shipped} shipped); "
                              "the next run loads the shipped experience again")
        except MemoryStoreError as e:
            console.print(f"[red]refused:[/red] {e}")
            raise typer.Exit(1) from None
    finally:
        mem.close()
