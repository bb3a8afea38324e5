"""The verdict: one JSON-serializable dict per candidate, typed as `Verdict`, and the one-line reason an LLM
can act on. Reading a verdict (text, memory status, facts for reports) is `readout.Readout`'s job.

A TypedDict, not pydantic: the checker runs on bare GPU hosts, and verdicts travel as JSON between hosts and
through the store. `new_verdict` fixes the keys every verdict has; the rest are added by the phase that knows.
"""

from __future__ import annotations

from typing import Any, TypedDict


class Flag(TypedDict):
    name: str
    rejects: bool    # False: a warning the verdict carries (e.g. timing_unreliable)
    reason: str


class Verdict(TypedDict, total=False):
    # -- always present (new_verdict) --------------------------------------------------------------------
    schema: int
    evaluator_version: str
    task: str
    backend: str
    size: str | None
    device: dict[str, Any] | None
    status: str                       # one of STATUSES
    accepted: bool
    compiled: bool
    compile_seconds: float | None
    compiler_message: str
    correct: bool | None
    failed_check: str | None          # the check that failed (values, shape, other_shape:values, ...)
    trials: list[dict[str, Any]]
    timing: dict[str, dict[str, Any]]  # candidate, eager, compile: median_ms, iqr_ms, spread_pct, reps, ...
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    flags: list[Flag]
    reason: str                       # one line an LLM can act on
    phase: str | None
    wall_seconds: float | None
    # -- added when known -------------------------------------------------------------------------------
    roofline: dict[str, Any]          # fraction, bound, floor_ms, bandwidth_GBps, fp32_tflops
    warnings: list[str]
    seed: int                         # the secret input seed, revealed after the evaluation
    key: str                          # the verdict store's content key
    kind: str                         # candidate | baseline
    cached: bool                      # replayed from the store
    no_code: bool                     # the reply had no candidate (gateway)
    not_evaluated: bool               # no device and no stored verdict (gateway)
    device_name: str
    candidate_sha256: str
    task_sha256: str

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


def new_verdict(task: str, backend: str) -> Verdict:
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


def add_flag(verdict: Verdict, name: str, reason: str, rejects: bool = True) -> None:
    verdict["flags"].append({"name": name, "rejects": rejects, "reason": reason})


def rejecting_flags(verdict: Verdict) -> list[Flag]:
    return [f for f in verdict["flags"] if f.get("rejects")]


def finalize(verdict: Verdict) -> Verdict:
    """Settle status/accepted from the facts gathered, and write the one-line reason."""
    if verdict["status"] in ("accepted", "incorrect") and verdict["correct"]:
        verdict["status"] = "rejected" if rejecting_flags(verdict) else "accepted"
    verdict["accepted"] = verdict["status"] == "accepted"
    if not verdict["reason"]:
        verdict["reason"] = reason_line(verdict)
    return verdict


def _ms(x: float | None) -> str:
    return "?" if x is None else (f"{x:.3f} ms" if x < 10 else f"{x:.1f} ms")


def reason_line(v: Verdict) -> str:
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
