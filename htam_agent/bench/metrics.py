"""The numbers of the bench table, from records (plain dicts; see records.py).

Definitions (KernelBench's, made precise):

* correctness rate: tasks with at least one accepted candidate / tasks.
* fast_p against a baseline (eager or torch.compile): tasks that are correct AND whose best speedup over that
  baseline was measured and is strictly greater than p, over ALL tasks (incorrect and errored tasks count as
  not fast). A speedup of exactly p is not fast_p. fast_0 is therefore "correct and timed"; it equals the
  correctness rate whenever every correct task was timed.
* geomean speedup: the geometric mean of the best speedups of the correct, timed tasks (incorrect tasks are
  left out, not counted as 1x; the count used is reported next to it).
* cost: LLM calls, input and output tokens, wall seconds and evaluations, as totals and per-task means.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

P_VALUES = (0.0, 1.0, 1.5, 2.0)
BASELINES = ("eager", "compile")


def speedup(rec: dict[str, Any], baseline: str = "eager") -> float | None:
    value = rec.get(f"speedup_vs_{baseline}")
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value > 0 else None


def is_correct(rec: dict[str, Any]) -> bool:
    return bool(rec.get("correct")) and rec.get("status", "done") == "done"


def correctness_rate(records: Sequence[dict[str, Any]]) -> float | None:
    if not records:
        return None
    return sum(is_correct(r) for r in records) / len(records)


def fast_p(records: Sequence[dict[str, Any]], p: float, baseline: str = "eager") -> float | None:
    """Fraction of all tasks that are correct with a measured speedup strictly above p."""
    if not records:
        return None
    hits = 0
    for r in records:
        s = speedup(r, baseline)
        if is_correct(r) and s is not None and s > p:
            hits += 1
    return hits / len(records)


def geomean(values: Iterable[float]) -> float | None:
    vals = [float(v) for v in values]
    if not vals:
        return None
    if any(v <= 0 or not math.isfinite(v) for v in vals):
        raise ValueError("geomean of non-positive or non-finite values")
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def correct_speedups(records: Sequence[dict[str, Any]], baseline: str = "eager") -> list[float]:
    return [s for r in records if is_correct(r) and (s := speedup(r, baseline)) is not None]


def summarize(records: Sequence[dict[str, Any]], p_values: Sequence[float] = P_VALUES) -> dict[str, Any]:
    """Every metric of one group of records (one method, or one method within a level or category)."""
    n = len(records)
    out: dict[str, Any] = {
        "tasks": n,
        "correct": sum(is_correct(r) for r in records),
        "errors": sum(r.get("status") == "error" for r in records),
        "unloadable": sum(r.get("status") == "unloadable" for r in records),
        "correctness": correctness_rate(records),
    }
    for b in BASELINES:
        sp = correct_speedups(records, b)
        out[f"fast_{b}"] = {str(p): fast_p(records, p, b) for p in p_values}
        out[f"geomean_{b}"] = geomean(sp)
        out[f"timed_{b}"] = len(sp)
    for name in ("llm_calls", "input_tokens", "output_tokens", "wall_seconds", "evaluations"):
        total = sum(float(r.get(name) or 0) for r in records)
        out[f"{name}_total"] = total
        out[f"{name}_mean"] = total / n if n else None
    out["tokens_total"] = out["input_tokens_total"] + out["output_tokens_total"]
    return out


def group(records: Iterable[dict[str, Any]], *fields: str) -> dict[tuple, list[dict[str, Any]]]:
    """Records by the values of `fields` (insertion order kept)."""
    out: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        out.setdefault(tuple(r.get(f) for f in fields), []).append(r)
    return out


def table(records: Sequence[dict[str, Any]], by: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """{method: {group: summary}}; group is "all" when `by` is None, else the record's `by` value (level,
    category). Seeds of one method are pooled (each task x seed counts once)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (method,), recs in group(records, "method").items():
        if by is None:
            out[method] = {"all": summarize(recs)}
        else:
            out[method] = {str(g): summarize(rs) for (g,), rs in sorted(group(recs, by).items(), key=lambda kv: str(kv[0]))}
    return out


def fast_p_curve(records: Sequence[dict[str, Any]], baseline: str = "eager",
                 ps: Sequence[float] | None = None) -> tuple[list[float], list[float]]:
    """(p values, fast_p) for a curve; p from 0 to just past the largest speedup seen."""
    if ps is None:
        top = max(correct_speedups(records, baseline) or [2.0])
        top = max(top * 1.05, 2.0)
        steps = 200
        ps = [top * i / steps for i in range(steps + 1)]
    return list(ps), [fast_p(records, p, baseline) or 0.0 for p in ps]


__all__ = ["BASELINES", "P_VALUES", "correct_speedups", "correctness_rate", "fast_p", "fast_p_curve", "geomean",
           "group", "is_correct", "speedup", "summarize", "table"]
