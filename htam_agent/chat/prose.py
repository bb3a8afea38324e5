"""Answers for a person: what the slash commands and the page's chat say, in sentences with the figures that
matter. The tools give an LLM compact JSON; a person reads these (`--json` after a slash command gives the
JSON instead).

Lines are plain text with a two-space indent for list items, so the terminal can wrap them with a hanging
indent and the page can show them as Markdown-free prose.
"""

from __future__ import annotations

import json
from typing import Any

from .runview import RunView, StepRow, shorten


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def step_lines(steps: list[StepRow], waiting: int | None = None) -> list[str]:
    """One line per step (direction as applied, with the one asked for when they differ), then why;
    `waiting`: the step a pause holds."""
    out = []
    for s in steps:
        verdicts = "; ".join(s.verdicts) or ("no candidate" if s.done else "waiting for your decision"
                                             if s.step == waiting else "running")
        who = f", chosen by {s.chosen_by}" if s.chosen_by else ""
        out.append(f"  step {s.step}: {s.direction_shown}{who}: {verdicts}")
    notes = [n for s in steps for n in s.explanation().splitlines() if n]
    if notes:
        out.append("Why:")
        out += [f"  {n}" for n in notes]
    return out


def outcome_text(out: dict[str, Any], view: RunView | None = None) -> str:
    """A run's answer after optimize, steer or resume: finished (the headline and what to do) or paused."""
    state = out.get("state")
    lines: list[str] = []
    if state == "paused":
        lines.append(f"Run {out.get('run_id')} is paused before step {out.get('step')}: the planned direction is "
                     f"{out.get('direction')} ({shorten(str(out.get('reason') or ''), 160)}).")
        if out.get("strategies"):
            lines.append("Strategies it would try: " + ", ".join(map(str, out["strategies"])) + ".")
        others = [d for d in out.get("directions") or [] if d != out.get("direction")]
        if others:
            lines.append("Other directions: " + ", ".join(others) + ".")
        if out.get("best_speedup"):
            lines.append(f"Best so far: {_x(out['best_speedup'])} over eager PyTorch.")
        lines.append("Answer with /steer accept, /steer direction ID, /steer code FILE or /steer stop.")
    elif state == "finished":
        lines.append(str(out.get("headline") or "The run finished."))
        if out.get("why"):
            lines.append(f"Why: {out['why']}")
        lines.append(f"Run {out.get('run_id')}: {out.get('evaluations', '?')} candidate(s) evaluated by "
                     + ("the offline exemplar coder" if not out.get("uses_llm") else f"{out.get('coder')}") + ".")
    else:
        lines.append(f"Run {out.get('run_id', '')}: {state}. {out.get('error', '')}".strip())
    if view is not None and view.steps:
        lines.append("Steps:")
        lines += step_lines(view.steps, (view.pause or {}).get("step"))
    if state == "finished" and out.get("best_kernel_path"):
        lines.append(f"Best kernel: {out['best_kernel_path']}")
        lines.append("Next: /export [PATH] writes it where you want it; /explain N says why candidate N was "
                     "not accepted; /show for the whole run.")
    return "\n".join(lines)


def _run_line(r: dict[str, Any]) -> str:
    best = r.get("best_speedup_vs_eager")
    return (f"  {r['run_id']}: {r.get('task')} on {r.get('backend')}, {r.get('state', '')}; "
            f"{r.get('steps_done')} of {r.get('steps_budget')} steps, {r.get('evaluated')} candidate(s), "
            + (f"best {_x(best)} over eager" + (f", {_x(r['best_speedup_vs_compile'])} over torch.compile"
                                                 if r.get("best_speedup_vs_compile") else "")
               if best else "no accepted kernel"))


def runs_text(rows: list[dict[str, Any]], limit: int = 15) -> str:
    if not rows:
        return "No runs yet. Start one with /optimize TASK.py (or paste a task's code)."
    head = f"{len(rows)} run(s), newest first" + (f" (the {limit} newest shown)" if len(rows) > limit else "") + ":"
    return "\n".join([head, *(_run_line(r) for r in rows[:limit]),
                      "/show RUN_ID for one run's steps; /compare RUN_ID RUN_ID side by side."])


def show_text(view: RunView, state: str) -> str:
    r = view.summary()
    lines = [f"Run {view.run_id}: {view.task_name} on {view.context.get('backend')}, {state}.",
             ("Outcome: " if state == "finished" else "Now: ") + view.last_activity()]
    if r.get("best_speedup_vs_eager"):
        frac = r.get("best_roofline_fraction")
        lines.append(f"Best: {_x(r['best_speedup_vs_eager'])} over eager, {_x(r.get('best_speedup_vs_compile'))} "
                     "over torch.compile" + ("" if frac is None else f", {100 * frac:.0f}% of the roofline") + ".")
    lines.append("Steps:")
    lines += step_lines(view.steps, (view.pause or {}).get("step")) if view.steps else ["  none yet"]
    if view.pause is not None and state == "paused":
        lines.append(f"Waiting for your decision before step {view.pause.get('step')} (planned direction "
                     f"{view.pause.get('direction')}): /steer accept | direction ID | code FILE | stop.")
    elif state.startswith("stopped"):
        lines.append(f"It stopped before it finished: /resume {view.run_id} continues it.")
    return "\n".join(lines)


def compare_text(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "Nothing to compare: name two or more runs (/runs lists them)."
    fastest = max(rows, key=lambda r: r.get("best_speedup_vs_eager") or 0.0)
    lines = ["Side by side:", *(_run_line(r) for r in rows)]
    if fastest.get("best_speedup_vs_eager"):
        lines.append(f"Fastest: {fastest['run_id']} ({_x(fastest['best_speedup_vs_eager'])} over eager).")
    return "\n".join(lines)


def memory_text(out: dict[str, Any]) -> str:
    scope = " and ".join(x for x in (out.get("op_class"), out.get("backend")) if x) or "every operator class"
    lines = [f"The memory at {out.get('memory')} ({out.get('recorded_transitions')} recorded transition(s)), "
             f"for {scope}:"]
    if "directions" in out:
        lines.append("Directions, most promising first (prior; taken, improved):")
        lines += [f"  {d['id']}: prior {d['prior']:.2f}; taken {d['taken']:g}, improved {d['improved']:g}"
                  for d in out["directions"]]
    if "transitions" in out:
        lines.append("Transitions (from -> to: times, improved rate, mean gain):" if out["transitions"]
                     else "Transitions: none recorded yet.")
        lines += [f"  {t['from']} -> {t['to']}: {t['n']:g} time(s), {100 * t['improved_rate']:.0f}% improved, "
                  f"mean gain {t['mean_gain']}" for t in out["transitions"]]
    if "learned" in out:
        lines.append("Learned strategies:" if out["learned"] else "Learned strategies: none yet.")
        lines += [f"  {c['id']} ({c['direction']}): {shorten(c['title'], 90)}; from {c.get('from_task')}, "
                  f"{_x(c.get('speedup_after'))} after" for c in out["learned"]]
    if "strategies" in out:
        lines.append("Strategies (used, improved rate):")
        lines += [f"  {s['id']} ({s['direction']}): {shorten(s['title'], 80)}; used {s['used']:g}"
                  + ("" if s.get("improved_rate") is None else f", {100 * s['improved_rate']:.0f}% improved")
                  for s in out["strategies"]]
    lines.append("Add --json for the raw table.")
    return "\n".join(lines)


def export_text(out: dict[str, Any]) -> str:
    sp, comp = out.get("speedup_vs_eager"), out.get("speedup_vs_compile")
    where = " (the current folder: /export PATH writes elsewhere)" if out.get("default_path") else ""
    lines = [f"Wrote the best kernel of run {out['run_id']}"
             + (f" (candidate {out['candidate']}" + (f", {_x(sp)} over eager" if sp is not None else "")
                + (f", {_x(comp)} over torch.compile" if comp is not None else "") + ")" if out.get("candidate")
                else "")
             + f" to {out['path']}{where}."]
    if out.get("warning"):
        lines.append(f"Warning: {out['warning']}.")
    elif comp is not None and comp < 1.0:
        lines.append(f"Note: torch.compile runs this operator faster ({comp:.2f}x): prefer torch.compile where "
                     "you can use it.")
    return "\n".join(lines)


def eval_text(out: dict[str, Any]) -> str:
    return (f"{out['eval_id']}: " + ("accepted. " if out.get("accepted") else "not accepted. ")
            + str(out.get("verdict", "")) + f"\n/explain {out['eval_id']} says what it means and what to change.")


def tool_summary(name: str, text: str, limit: int = 160) -> str:
    """A tool's JSON answer (for the model) as one short line for the person watching."""
    try:
        data = json.loads(text)
    except ValueError:
        return shorten(text, limit)
    if isinstance(data, dict):
        if data.get("state") == "paused":
            return f"paused before step {data.get('step')} (planned direction {data.get('direction')})"
        for key in ("headline", "path", "verdict"):
            if data.get(key):
                return shorten(str(data[key]), limit)
        if "run_id" in data:
            return shorten(f"run {data['run_id']}: {data.get('state', '')}", limit)
    if isinstance(data, list):
        return f"{len(data)} item(s)"
    return shorten(text, limit)
