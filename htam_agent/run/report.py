"""The run's report: report.md with two plots (speedup per step; the path taken on the HTG).

Plots use matplotlib's Agg backend (no display needed); a plot that fails to render is noted in the report
instead of failing the run.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def plot_speedup(history: list[dict[str, Any]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [h["step"] for h in history]
    speeds = [h.get("speedup_vs_eager") if h.get("accepted") else None for h in history]
    best, running = [], None
    for s in speeds:
        if s is not None and (running is None or s > running):
            running = s
        best.append(running)
    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=110)
    ok = [(x, y) for x, y in zip(steps, speeds, strict=True) if y is not None]
    bad = [x for x, y in zip(steps, speeds, strict=True) if y is None]
    if ok:
        ax.scatter(*zip(*ok, strict=True), color="tab:blue", label="step's best candidate", zorder=3)
    if bad:
        ax.scatter(bad, [1.0] * len(bad), marker="x", color="tab:red", label="rejected", zorder=3)
    ax.step(steps, [b if b is not None else math.nan for b in best], where="post", color="tab:green",
            label="best so far")
    ax.axhline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_xlabel("step")
    ax.set_ylabel("speedup over eager")
    ax.set_xticks(steps)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_htg_path(directions: list[str], history: list[dict[str, Any]], path: Path) -> Path:
    """Directions on a circle; arrows follow the steps' directions in order, green when the step improved."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(directions) or sorted({h["direction"] for h in history if h.get("direction")})
    pos = {d: (math.cos(2 * math.pi * i / len(names)), math.sin(2 * math.pi * i / len(names)))
           for i, d in enumerate(names)}
    fig, ax = plt.subplots(figsize=(5.5, 5.5), dpi=110)
    for d, (x, y) in pos.items():
        used = any(h.get("direction") == d for h in history)
        ax.scatter([x], [y], s=500, color="tab:orange" if used else "lightgray", zorder=2)
        ax.annotate(d.replace("_", "\n"), (x, y), ha="center", va="center", fontsize=6, zorder=3)
    prev = (0.0, 0.0)
    ax.scatter([0], [0], s=80, color="black")
    ax.annotate("start", (0, -0.08), ha="center", fontsize=7)
    for h in history:
        d = h.get("direction")
        if d not in pos:
            continue
        cur = pos[d]
        color = "tab:green" if h.get("improved") else "tab:red"
        if cur == prev:  # the same direction again: a small loop outside the node
            r = 1.18
            ang = math.atan2(cur[1], cur[0])
            ax.annotate("", xy=cur, xytext=(r * math.cos(ang + 0.25), r * math.sin(ang + 0.25)),
                        arrowprops={"arrowstyle": "->", "color": color, "lw": 1.4,
                                    "connectionstyle": "arc3,rad=0.6"})
            ax.annotate(str(h["step"]), (r * math.cos(ang + 0.25), r * math.sin(ang + 0.25)), fontsize=7,
                        color="navy")
            continue
        ax.annotate("", xy=cur, xytext=prev, arrowprops={
            "arrowstyle": "->", "color": color, "lw": 1.4,
            "connectionstyle": "arc3,rad=0.15"})
        mx, my = (prev[0] + cur[0]) / 2, (prev[1] + cur[1]) / 2
        ax.annotate(str(h["step"]), (mx, my), fontsize=7, color="navy")
        prev = cur
    ax.set_xlim(-1.4, 1.4)
    ax.set_ylim(-1.4, 1.4)
    ax.set_axis_off()
    ax.set_title("path on the HTG (green: improved, red: did not)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _fmt(x: float | None, suffix: str = "x") -> str:
    return "-" if x is None else f"{x:.2f}{suffix}"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g} ms"


def outcome_lines(result: dict[str, Any]) -> list[str]:
    """The report's outcome bullets: what was found, what to do, why, and the numbers behind it."""
    from htam_agent.run.result import RunResult

    res = RunResult.from_dict(result)
    o = res.conclusion()
    lines = [f"- outcome: **{o.summary}**", f"- advice: {o.advice}"]
    if o.why:
        lines.append(f"- why: {o.why}")
    if res.correct:
        def vs(x: float | None, name: str) -> str:
            return f"{name} not timed" if x is None else f"{x:.2f}x over {name}"

        frac = res.best_roofline_fraction
        lines.append(f"- the best kernel: {vs(res.best_speedup_vs_eager, 'eager')}, "
                     f"{vs(res.best_speedup_vs_compile, 'torch.compile')}, "
                     + ("roofline not measured" if frac is None else f"{100 * frac:.0f}% of the roofline"))
    facts = res.facts()
    parts = []
    for label, key, frac in (("kernel", "candidate_ms", None), ("eager", "eager_ms", o.eager_roofline_fraction),
                             ("torch.compile", "compile_ms", o.compile_roofline_fraction)):
        if facts.get(key) is not None:
            parts.append(f"{label} {_ms(facts[key])}" + ("" if frac is None else f" ({100 * frac:.0f}% of the "
                                                                                 "roofline)"))
    if facts.get("floor_ms") is not None:
        parts.append(f"roofline floor {_ms(facts['floor_ms'])}"
                     + (f", {facts['bound']}-bound" if facts.get("bound") else ""))
    if parts:
        lines.append("- medians of the best kernel's verdict: " + "; ".join(parts)
                     + (f" (on {facts['device']})" if facts.get("device") else ""))
    return lines


def switch_notes(root: Path) -> list[str]:
    """Under the table: each candidate whose coder applied another direction than the one it was asked for
    (the table lists what it applied, as the memory records it), in the coder's own words."""
    import json
    import re

    out = []
    for gen_path in sorted(root.glob("step_*/cand_*_r*/generation.json")):
        try:
            gen = json.loads(gen_path.read_text())
            reply = (gen_path.parent / "reply.md").read_text() if (gen_path.parent / "reply.md").is_file() else ""
        except (OSError, ValueError):
            continue
        asked, applied = gen.get("assigned_direction"), gen.get("direction")
        if not asked or not applied or asked == applied:
            continue
        note = " ".join(re.sub(r"```.*?(```|$)", " ", reply, flags=re.S).split("; knobs ", 1)[0].split())
        note = note if len(note) <= 240 else note[:237].rsplit(" ", 1)[0] + "..."
        step = gen_path.parent.parent.name.removeprefix("step_").lstrip("0") or "0"
        out.append(f"- step {step} ({gen_path.parent.name}): asked `{asked}`; the coder declared and applied "
                   f"`{applied}`" + (f": {note}" if note else ""))
    return (["", "Directions the coder changed (the table shows what was applied):", *out] if out else [])


def write_report(root: Path, result: dict[str, Any], history: list[dict[str, Any]], directions: list[str]
                 ) -> Path:
    plots: list[str] = []
    for name, fn in (("speedup.png", lambda p: plot_speedup(history, p)),
                     ("htg_path.png", lambda p: plot_htg_path(directions, history, p))):
        try:
            fn(root / name)
            plots.append(f"![{name}]({name})")
        except Exception as exc:  # noqa: BLE001 - a plot is not worth losing the report
            plots.append(f"({name} could not be drawn: {exc})")
    who = (f"LLM `{result['coder']}`" if result.get("uses_llm")
           else "the offline exemplar coder (**no LLM was used**)")
    lines = [
        f"# htam run {result['run_id']}: {result['task']}",
        "",
        f"- backend: {result['backend']}; code written by {who}; method: {result['method']}",
        *outcome_lines(result),
        f"- stopped: {result['stop_reason']}; {result['evaluations']} evaluation(s); {result['llm_calls']} LLM "
        f"call(s), {result['input_tokens']} input and {result['output_tokens']} output tokens; "
        f"{result['wall_seconds']:.1f} s",
        f"- best correct kernel: `{result.get('best_code_path') or 'none'}`",
        "",
        "| step | direction | strategies | status | speedup vs eager | vs compile | roofline | repairs | reason |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for h in history:
        reason = (h.get("reason") or "").replace("|", "/").replace("\n", " ")[:120]
        lines.append(f"| {h['step']} | {h.get('direction') or '-'} | {', '.join(h.get('strategies') or []) or '-'} "
                     f"| {h.get('status')} | {_fmt(h.get('speedup_vs_eager'))} | {_fmt(h.get('speedup_vs_compile'))}"
                     f" | {_fmt(h.get('roofline_fraction'), '')} | {h.get('repairs', 0)} | {reason} |")
    lines += switch_notes(root)
    lines += ["", *plots, ""]
    path = root / "report.md"
    from htam_agent.run.artifacts import atomic_write

    return atomic_write(path, "\n".join(lines))
