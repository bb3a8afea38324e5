"""The bench's comparison of methods: results.json, report.md (with PNG plots beside it) and a self-contained report.html.

Plots: the distribution of speedups over eager per method (correct tasks), fast_p curves against eager and
against torch.compile, and per-category bars (correctness and geomean speedup).
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import metrics as M
from .methods import METHODS

Table = tuple[list[str], list[list[str]]]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _x(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}x"


def _num(x: float | None, nd: int = 1) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.{nd}f}"


def _methods_in(records: Sequence[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["method"] for r in records))


# -- tables ---------------------------------------------------------------------------------------------------
def overall_tables(records: Sequence[dict[str, Any]]) -> dict[str, Table]:
    summ = {m: g["all"] for m, g in M.table(records).items()}
    ps = [str(p) for p in M.P_VALUES]
    out: dict[str, Table] = {}
    for b, label in (("eager", "eager"), ("compile", "torch.compile")):
        head = ["method", "tasks", "correct"] + [f"fast_{float(p):g}" for p in ps] + [f"geomean vs {label} (n)"]
        rows = []
        for m, s in summ.items():
            rows.append([m, str(s["tasks"]), _pct(s["correctness"])]
                        + [_pct(s[f"fast_{b}"][p]) for p in ps]
                        + [f"{_x(s[f'geomean_{b}'])} ({s[f'timed_{b}']})"])
        out[f"vs {label}"] = (head, rows)
    head = ["method", "budget", "evaluations used (mean / cap)", "LLM calls (mean)", "tokens in+out (mean)",
            "wall s (mean)", "wall s (total)", "harness errors", "could not load"]
    rows = []
    for m, s in summ.items():
        recs = [r for r in records if r["method"] == m]
        budgets = sorted({r.get("budget") for r in recs})
        caps = sorted({r.get("max_evaluations") for r in recs if r.get("max_evaluations") is not None})
        note = "" if METHODS.get(m) is None or METHODS[m].uses_budget else " (not budgeted)"
        rows.append([m, ",".join(map(str, budgets)) + note,
                     f"{_num(s['evaluations_mean'], 2)} / {','.join(map(str, caps)) or '-'}",
                     _num(s["llm_calls_mean"], 2),
                     _num((s["tokens_total"] / s["tasks"]) if s["tasks"] else None, 0),
                     _num(s["wall_seconds_mean"]), _num(s["wall_seconds_total"]), str(s["errors"]),
                     str(s.get("unloadable", 0))])
    out["cost"] = (head, rows)
    return out


def grouped_table(records: Sequence[dict[str, Any]], by: str) -> Table:
    tab = M.table(records, by=by)
    groups = sorted({g for per in tab.values() for g in per})
    head = [by, "method", "tasks", "correct", "fast_1 eager", "fast_1 compile", "geomean vs eager (n)"]
    rows = []
    for g in groups:
        for m, per in tab.items():
            if g not in per:
                continue
            s = per[g]
            rows.append([g, m, str(s["tasks"]), _pct(s["correctness"]), _pct(s["fast_eager"]["1.0"]),
                         _pct(s["fast_compile"]["1.0"]), f"{_x(s['geomean_eager'])} ({s['timed_eager']})"])
    return head, rows


def task_table(records: Sequence[dict[str, Any]]) -> Table:
    methods = _methods_in(records)
    by_task: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in records:
        by_task.setdefault(r["task"], {}).setdefault(r["method"], []).append(r)
    rows = []
    for task, per in by_task.items():
        row = [task]
        for m in methods:
            cells = []
            for r in per.get(m, []):
                if r.get("status") == "error":
                    cells.append("error")
                elif r.get("status") == "unloadable":
                    cells.append("could not load")
                elif not r.get("correct"):
                    cells.append("incorrect")
                else:
                    s = M.speedup(r, "eager")
                    cells.append("correct" if s is None else f"{s:.2f}x")
            row.append(" / ".join(cells) or "")
        rows.append(row)
    return ["task"] + methods, rows


def problems_table(records: Sequence[dict[str, Any]]) -> Table:
    """Tasks that could not be loaded, with the reason, and the notes runs carried (one row per task)."""
    rows: dict[str, list[str]] = {}
    for r in records:
        if r.get("status") == "unloadable":
            rows.setdefault(r["task"], [r["task"], "could not load", str(r.get("error", "")).strip()])
        for note in r.get("notes") or []:
            rows.setdefault(r["task"], [r["task"], "note", str(note)])
    return ["task", "kind", "reason"], list(rows.values())


def _md(table: Table) -> str:
    head, rows = table
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _html_table(table: Table) -> str:
    head, rows = table
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


# -- plots ----------------------------------------------------------------------------------------------------
def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def plot_speedups(records: Sequence[dict[str, Any]], path: Path) -> None:
    plt = _plt()
    methods = _methods_in(records)
    data = [M.correct_speedups([r for r in records if r["method"] == m], "eager") for m in methods]
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(methods) + 2), 4))
    if any(data):
        ax.boxplot([d or [math.nan] for d in data], showfliers=False)
        for i, d in enumerate(data, 1):
            ax.scatter([i + 0.08 * ((j % 5) - 2) for j in range(len(d))], d, s=14, alpha=0.7, zorder=3)
        from matplotlib.ticker import FuncFormatter

        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.axhline(1.0, color="grey", lw=1, ls="--")
    else:
        ax.text(0.5, 0.5, "no correct task", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks(range(1, len(methods) + 1), methods, rotation=20)
    ax.set_ylabel("best speedup vs eager (correct tasks)")
    ax.set_title("Speedup distribution per method")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_fast_p(records: Sequence[dict[str, Any]], path: Path) -> None:
    plt = _plt()
    methods = _methods_in(records)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, (b, label) in zip(axes, (("eager", "eager"), ("compile", "torch.compile")), strict=True):
        top = max(M.correct_speedups(records, b) or [2.0])
        ps = [max(top * 1.05, 2.0) * i / 200 for i in range(201)]
        for m in methods:
            xs, ys = M.fast_p_curve([r for r in records if r["method"] == m], b, ps)
            ax.step(xs, ys, where="post", label=m)
        ax.axvline(1.0, color="grey", lw=1, ls="--")
        ax.set_xlabel(f"p (speedup threshold vs {label})")
        ax.set_title(f"fast_p vs {label}")
        ax.set_ylim(0, 1.02)
    axes[0].set_ylabel("fraction of tasks correct and faster than p")
    axes[-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_categories(records: Sequence[dict[str, Any]], path: Path) -> None:
    plt = _plt()
    tab = M.table(records, by="category")
    methods = list(tab)
    cats = sorted({c for per in tab.values() for c in per})
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 1.2 * len(cats) + 4), 4))
    width = 0.8 / max(1, len(methods))
    for k, m in enumerate(methods):
        xs = [i + (k - (len(methods) - 1) / 2) * width for i in range(len(cats))]
        corr = [(tab[m].get(c) or {}).get("correctness") or 0.0 for c in cats]
        geo = [(tab[m].get(c) or {}).get("geomean_eager") or 0.0 for c in cats]
        axes[0].bar(xs, corr, width, label=m)
        axes[1].bar(xs, geo, width, label=m)
    for ax, title in zip(axes, ("correctness rate", "geomean speedup vs eager (correct tasks)"), strict=True):
        ax.set_xticks(range(len(cats)), cats, rotation=30, ha="right")
        ax.set_title(title)
    axes[0].set_ylim(0, 1.02)
    axes[1].axhline(1.0, color="grey", lw=1, ls="--")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


PLOTS = (("speedup_distribution.png", "Speedup distribution per method", plot_speedups),
         ("fast_p.png", "fast_p curves", plot_fast_p),
         ("categories.png", "Per operator class", plot_categories))


# -- the report -----------------------------------------------------------------------------------------------
def write_report(records: Sequence[dict[str, Any]], out_dir: str | Path, *, title: str = "htam bench",
                 notes: Sequence[str] = ()) -> dict[str, Path]:
    """Write results.json, report.md, report.html and the plots into out_dir; returns their paths."""
    if not records:
        raise ValueError("no records to report")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    records = list(records)
    paths: dict[str, Path] = {}

    results = out / "results.json"
    tmp = results.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(records, indent=1, default=str))
    os.replace(tmp, results)
    paths["json"] = results

    summary = {m: {by or "overall": M.table([r for r in records if r["method"] == m], by=by)[m]
                   for by in (None, "level", "category")} for m in _methods_in(records)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    paths["summary"] = out / "summary.json"

    for name, _, fn in PLOTS:
        fn(records, out / name)
        paths[name] = out / name

    suites = sorted({str(r.get("suite")) for r in records})
    backends = sorted({str(r.get("backend")) for r in records})
    coders = sorted({str(r.get("coder")) for r in records})
    seeds = sorted({r.get("seed") for r in records})
    meta = (f"suite {', '.join(suites)}; backend {', '.join(backends)}; coder {', '.join(coders)}; "
            f"seeds {', '.join(map(str, seeds))}; {len({r['task'] for r in records})} tasks; "
            f"{len(records)} runs; written {time.strftime('%Y-%m-%d %H:%M')}")
    method_lines = [f"- **{m}**: {METHODS[m].description}" if m in METHODS else f"- **{m}**"
                    for m in _methods_in(records)]
    definitions = ("fast_p: share of ALL tasks that are correct with a best speedup strictly above p (incorrect, "
                   "errored and unloadable tasks count as not fast). Geomean: over correct, timed tasks only (n in "
                   "parentheses). Equal budget: every method but one-shot may spend at most the same number "
                   "of evaluations per task (repairs count); 'evaluations used' shows what each really spent.")
    overall = overall_tables(records)
    sections: list[tuple[str, Table]] = [(f"Overall: {k}", v) for k, v in overall.items()]
    sections.append(("Per level", grouped_table(records, "level")))
    sections.append(("Per operator class", grouped_table(records, "category")))
    sections.append(("Per task (best speedup vs eager)", task_table(records)))
    problems = problems_table(records)
    if problems[1]:
        sections.append(("Tasks that could not load, and notes", problems))

    md = [f"# {title}", "", meta, "", *method_lines, "", definitions, ""]
    md += [f"- {n}" for n in notes]
    for heading, tab in sections:
        md += [f"## {heading}", "", _md(tab), ""]
    md += ["## Plots", ""]
    md += [f"![{alt}]({name})" for name, alt, _ in PLOTS]
    md.append("")
    paths["md"] = out / "report.md"
    paths["md"].write_text("\n".join(md))

    css = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;"
           "margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
           "td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}img{max-width:100%}")
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{css}</style></head><body><h1>{html.escape(title)}</h1><p>{html.escape(meta)}</p><ul>"]
    for m in _methods_in(records):
        desc = METHODS[m].description if m in METHODS else ""
        parts.append(f"<li><b>{html.escape(m)}</b>: {html.escape(desc)}</li>")
    parts.append(f"</ul><p>{html.escape(definitions)}</p>")
    parts += [f"<p>{html.escape(n)}</p>" for n in notes]
    for heading, tab in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>{_html_table(tab)}")
    parts.append("<h2>Plots</h2>")
    for name, alt, _ in PLOTS:
        b64 = base64.b64encode((out / name).read_bytes()).decode()
        parts.append(f"<h3>{html.escape(alt)}</h3><img alt='{html.escape(alt)}' src='data:image/png;base64,{b64}'>")
    parts.append("</body></html>")
    paths["html"] = out / "report.html"
    paths["html"].write_text("".join(parts))
    return paths


__all__ = ["grouped_table", "overall_tables", "problems_table", "task_table", "write_report"]
