"""What the page's run side shows, computed from a `RunView` (the run folder): the step table, the speedup by
step over eager and torch.compile, the HTG with this run's path, and the best kernel with its verdict and its
diff to the previous best. Plain functions of the folder, so the page shows the same after a reload or a
restart, and tests check them without a browser.
"""

from __future__ import annotations

import html
import math
from typing import Any

from htam_agent.chat.explain import explain
from htam_agent.chat.runview import RunView

STEP_HEADERS = ["step", "direction", "verdicts", "vs eager", "vs compile", "chosen by", "strategies"]


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def step_rows(view: RunView) -> list[list[str]]:
    """The table's cells: the direction as applied (with the one asked for when the coder took another)."""
    waiting = (view.pause or {}).get("step")
    return [[str(s.step), s.direction_shown, "; ".join(s.verdicts) or ("-" if s.done else "waiting for your decision"
                                                                       if s.step == waiting else "running"),
             _x(s.speedup_vs_eager), _x(s.speedup_vs_compile), s.chosen_by or "policy",
             ", ".join(s.strategies) or ("none applied" if s.offered else "-")]
            for s in view.steps]


def step_table_html(view: RunView | None) -> str:
    """The step table as plain HTML (it grows with the run, no inner scroll box), then why a step's direction
    differs from the one asked for, or why a candidate repeats an earlier one."""
    if view is None or not view.steps:
        return '<p class="htam-empty">no steps yet</p>'
    head = "".join(f"<th>{html.escape(h)}</th>" for h in STEP_HEADERS)
    def cell(text: str, tip: str = "") -> str:
        title = f' title="{html.escape(tip)}"' if tip else ""
        return f"<td{title}>{html.escape(text)}</td>"

    body = "".join(
        "<tr>" + "".join(cell(c, "offered: " + ", ".join(s.offered) if i == 6 and s.offered else "")
                         for i, c in enumerate(row)) + "</tr>"
        for s, row in zip(view.steps, step_rows(view), strict=True))
    notes = [n for s in view.steps for n in s.explanation().splitlines() if n]
    why = ("<ul class=\"htam-why\">" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>") if notes else ""
    return f'<table class="htam-steps"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{why}'


def speedup_figure(view: RunView) -> Any:
    """Best accepted speedup of each step over eager and torch.compile, and the run's best so far."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.2, 2.9), dpi=100)
    ax = fig.add_subplot()
    steps = [s for s in view.steps if s.speedup_vs_eager is not None]
    xs = [s.step for s in steps]
    if steps:
        ax.plot(xs, [s.speedup_vs_eager for s in steps], "o-", label="over eager")
        comp = [(s.step, s.speedup_vs_compile) for s in steps if s.speedup_vs_compile is not None]
        if comp:
            ax.plot([c[0] for c in comp], [c[1] for c in comp], "s--", label="over torch.compile")
        best, run = [], 0.0
        for s in steps:
            run = max(run, s.speedup_vs_eager or 0.0)
            best.append(run)
        ax.step(xs, best, where="post", alpha=0.5, label="best so far")
        ax.legend(loc="best", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no accepted kernel yet", ha="center", va="center", transform=ax.transAxes)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("step")
    ax.set_xticks(sorted({s.step for s in view.steps}) or [0])
    ax.set_ylabel("speedup")
    ax.set_title(f"{view.task_name}: speedup by step", fontsize=10)
    fig.tight_layout()
    return fig


def htg_figure(view: RunView, directions: list[str]) -> Any:
    """The directions of the HTG on a circle, with the path this run took (one numbered arrow per step)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.2, 2.9), dpi=100)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_aspect("equal")
    n = max(1, len(directions))
    pos = {d: (math.cos(2 * math.pi * i / n), math.sin(2 * math.pi * i / n)) for i, d in enumerate(directions)}
    path = [s.direction for s in view.steps if s.direction in pos]
    for d, (x, y) in pos.items():
        taken = d in path
        ax.scatter([x], [y], s=260 if taken else 110, color="tab:orange" if taken else "lightgrey", zorder=2)
        ax.annotate(d, (x, y), textcoords="offset points", xytext=(11 * x, 9 * y + (4 if y >= 0 else -6)),
                    ha="left" if x > 0.3 else "right" if x < -0.3 else "center", va="center", fontsize=9,
                    weight="bold" if taken else "normal")
    for i in range(1, len(path)):
        (x0, y0), (x1, y1) = pos[path[i - 1]], pos[path[i]]
        if path[i - 1] == path[i]:
            ax.annotate(f"{i}", (x0, y0), textcoords="offset points", xytext=(12, -12), fontsize=10, color="tab:red")
            continue
        ax.annotate("", (x1, y1), (x0, y0), arrowprops={"arrowstyle": "->", "color": "tab:red", "lw": 1.5})
        ax.annotate(f"{i}", ((x0 + x1) / 2, (y0 + y1) / 2), fontsize=10, color="tab:red")
    if path:
        ax.annotate("start", pos[path[0]], textcoords="offset points", xytext=(14, -4), ha="left", fontsize=9,
                    color="tab:red")
    ax.set_xlim(-2.3, 2.3)
    ax.set_ylim(-1.3, 1.3)
    ax.set_title("HTG: directions, and this run's path", fontsize=10)
    fig.tight_layout()
    return fig


def best_panel(view: RunView) -> tuple[str, str, str]:
    """(verdict in words with the roofline fraction, the best kernel's code, its diff to the previous best)."""
    bests = view.bests()
    if not bests:
        return "no accepted kernel yet", "", ""
    b = bests[-1]
    r = b.readout
    frac = r.roofline_fraction
    head = (f"**best: {b.label}**: {_x(r.speedup_vs_eager)} over eager, {_x(r.speedup_vs_compile)} over "
            f"torch.compile, roofline fraction {'-' if frac is None else f'{100 * frac:.0f}%'}\n\n"
            + explain(b.verdict, b.label))
    return head, b.code, view.best_diff() or "(the first best kernel: no previous best to compare with)"


def status_text(view: RunView, active: bool, note: str = "") -> str:
    state = view.state(active)
    line = (f"**{view.task_name}** on {view.context.get('backend')}: **{state}**. {view.last_activity()}  \n"
            f"<small>run {view.run_id}</small>")
    if view.pause is not None and not active:  # the buttons are live only once the run's call has returned
        line += (f"\n\n**Waiting for your decision** at step {view.pause.get('step')}: planned direction "
                 f"`{view.pause.get('direction')}`: accept, pick another direction, give your code, or stop.")
    elif state.startswith("stopped"):
        line += "\n\nThis run stopped before it finished (closed, killed or crashed): press Resume to continue it."
    return line + (f"\n\n{note}" if note else "")
