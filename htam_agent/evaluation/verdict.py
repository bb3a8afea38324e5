"""The verdict: one JSON-serializable dict per candidate, and the one-line reason an LLM can act on.

Plain dicts (not pydantic) because the worker runs on bare GPU hosts; `new_verdict` fixes the key set.
"""

from __future__ import annotations

from typing import Any

EVALUATOR_VERSION = "0.2.0"
SCHEMA_VERSION = 1

# Terminal statuses, roughly in pipeline order.
STATUSES = (
    "accepted",          # correct, no rejecting flag
    "invalid_candidate", # static check failed (no ModelNew, no kernel of the backend)
    "compile_error",
    "runtime_error",     # raised in forward (or at construction), CUDA errors included
    "out_of_memory",
    "incorrect",
    "rejected",          # correct numbers but a rejecting anti-cheat flag
    "timeout",
    "crashed",           # the worker died (signal, exit() in the candidate)
    "error",             # the evaluator itself failed; not the candidate's fault
)


def new_verdict(task: str, backend: str) -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
        "evaluator_version": EVALUATOR_VERSION,
        "task": task,
        "backend": backend,
        "size": None,
        "device": None,
        "status": "error",
        "accepted": False,
        "compiled": False,
        "compile_seconds": None,
        "compiler_message": "",
        "correct": None,
        "failed_check": None,
        "trials": [],
        "timing": {},
        "speedup_vs_eager": None,
        "speedup_vs_compile": None,
        "flags": [],
        "reason": "",
        "phase": None,
        "wall_seconds": None,
    }


def add_flag(verdict: dict[str, Any], name: str, reason: str, rejects: bool = True) -> None:
    verdict["flags"].append({"name": name, "rejects": rejects, "reason": reason})


def rejecting_flags(verdict: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in verdict["flags"] if f.get("rejects")]


def finalize(verdict: dict[str, Any]) -> dict[str, Any]:
    """Settle status/accepted from the facts gathered, and write the one-line reason."""
    if verdict["status"] in ("accepted", "incorrect") and verdict["correct"]:
        verdict["status"] = "rejected" if rejecting_flags(verdict) else "accepted"
    verdict["accepted"] = verdict["status"] == "accepted"
    if not verdict["reason"]:
        verdict["reason"] = reason_line(verdict)
    return verdict


def _ms(x: float | None) -> str:
    return "?" if x is None else (f"{x:.3f} ms" if x < 10 else f"{x:.1f} ms")


def reason_line(v: dict[str, Any]) -> str:
    status = v["status"]
    if status == "accepted":
        t = v["timing"]
        cand = (t.get("candidate") or {}).get("median_ms")
        eager = (t.get("eager") or {}).get("median_ms")
        parts = []
        if v.get("speedup_vs_eager") is not None:
            parts.append(f"{v['speedup_vs_eager']:.2f}x vs eager ({_ms(cand)} vs {_ms(eager)})")
        if v.get("speedup_vs_compile") is not None:
            parts.append(f"{v['speedup_vs_compile']:.2f}x vs torch.compile")
        if not parts and cand is not None:
            parts.append(f"{_ms(cand)} per call")
        warn = [f["name"] for f in v["flags"]]
        return "accepted: correct on all trials" + (", " + ", ".join(parts) if parts else "") + (
            f" (warnings: {', '.join(warn)})" if warn else "")
    if status == "rejected":
        f = rejecting_flags(v)[0]
        return f"rejected ({f['name']}): {f['reason']}"
    if status == "incorrect":
        bad = next((t for t in v["trials"] if not t["passed"]), None)
        where = f" on trial '{bad['trial']}'" if bad else ""
        detail = bad.get("detail", "") if bad else ""
        return f"incorrect ({v['failed_check']}){where}: {detail}"
    if status == "compile_error":
        first = first_error_line(v["compiler_message"])
        return f"compile error: {first}" if first else "compile error (see compiler_message)"
    return f"{status}: {v.get('error') or 'see the verdict'}"


def first_error_line(message: str) -> str:
    """The compiler's first diagnostic (file:line: error: ...), else the first line mentioning an error."""
    import re

    for line in message.splitlines():
        if re.search(r":\d+(:\d+)?: (fatal )?error", line) or re.match(r"\s*error[: ]", line):
            return line.strip()[:300]
    for line in message.splitlines():
        low = line.lower()
        if "error" in low and not low.startswith(("ninja: build stopped", "traceback")):
            return line.strip()[:300]
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""
