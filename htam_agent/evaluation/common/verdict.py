"""The verdict: one JSON-serializable dict per candidate (`Verdict`, its schema), written by one writer
(`VerdictBuilder`) and sealed by one `finalize`. Reading a verdict is `readout.Readout`'s job.

Why a builder around a dict: verdicts travel as JSON between hosts and through the store (whose old files
must still read), so the wire stays a plain dict; but before, every checker phase wrote it by string key
and the parent edited it again after `finalize`. Now each fact has one method, a key outside the schema is
refused, and a finalized verdict refuses every write. What only the parent knows (its wall time, the
checker's stderr, a replay from the store) travels beside the verdict in an envelope (`with_envelope`).
Standard library only: the checker runs on bare GPU hosts.
"""

from __future__ import annotations

import copy
import hashlib
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
    # -- added when known -------------------------------------------------------------------------------
    error: str                        # the exception's text (runtime errors, evaluator errors)
    tier: str                         # bare | default | thorough
    builds: list[dict[str, Any]]      # name, key, cache, seconds of each extension build
    build_seconds: float
    sandbox: dict[str, Any]           # the sandbox's user and confinement
    kernel_launches: dict[str, int]
    aten_ops: dict[str, list[str]]    # reference, candidate
    wall_clock: dict[str, Any]        # the checker's clock around the timed calls
    phase_seconds: dict[str, float | None]
    phase_costs: dict[str, dict[str, float]]  # per phase: CPU s of checker and sandboxes, full-size buffers made
    sandbox_stderr_tail: str
    scratch: str                      # the kept scratch folder (keep_scratch)
    leftover_processes: int
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
    # -- the parent's envelope (ENVELOPE_KEYS): beside the verdict, never written by its builder ----------
    wall_seconds: float               # the parent's clock from job to verdict
    checker_stderr_tail: str
    candidate_path: str               # a batch line's candidate file (python -m htam_agent.evaluation batch)
    task_id: str                      # a batch line's task (level1/19_ReLU.py, ...)

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
    "crashed",           # the sandbox died (signal, exit() in the candidate)
    "error",             # the evaluator itself failed; not the candidate's fault
)


# Facts `VerdictBuilder.record` writes as given; every other key has a method of its own.
FACT_KEYS = frozenset({
    "size", "device", "phase", "seed", "tier", "builds", "build_seconds", "sandbox", "kernel_launches",
    "aten_ops", "roofline", "wall_clock", "sandbox_stderr_tail", "scratch", "leftover_processes", "no_code",
    "not_evaluated", "memory_cap", "phase_costs",
})
# What the parent adds beside a finalized verdict (`with_envelope`); no builder method writes these.
ENVELOPE_KEYS = frozenset({"wall_seconds", "checker_stderr_tail", "cached", "candidate_path", "task_id"})
KINDS = ("candidate", "baseline")


class VerdictSealed(RuntimeError):
    """A write to a verdict after its `finalize`: the fact belongs before it, or in the parent's envelope."""


def _new(task: str, backend: str) -> Verdict:
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
    }


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class VerdictBuilder:
    """The one writer of a verdict: the checker's phases (and the parent, for the verdicts no checker gave)
    record facts through its methods; `finalize` settles status, `accepted` and the reason once and seals it."""

    def __init__(self, task: str, backend: str) -> None:
        self._v: Verdict = _new(task, backend)
        self._sealed = False

    # -- reads ---------------------------------------------------------------------------------------------
    def get(self, key: str, default: Any = None) -> Any:
        """A recorded fact (the phases read what earlier phases found; treat it as read-only)."""
        return self._v.get(key, default)  # type: ignore[misc]

    @property
    def status(self) -> str:
        return self._v["status"]

    @property
    def sealed(self) -> bool:
        return self._sealed

    def has_flag(self, name: str) -> bool:
        return any(f["name"] == name for f in self._v["flags"])

    @property
    def rejected(self) -> bool:
        """A rejecting flag was raised (the later checks are skipped)."""
        return bool(rejecting_flags(self._v))

    def timing(self, name: str) -> dict[str, Any] | None:
        return self._v["timing"].get(name)

    def trial_count(self) -> int:
        return len(self._v["trials"])

    # -- writes --------------------------------------------------------------------------------------------
    def _open(self, what: str) -> Verdict:
        if self._sealed:
            raise VerdictSealed(f"verdict of task {self._v['task']!r}: {what} after finalize(); record it before "
                                "finalize (a job field the checker records) or in the parent's envelope "
                                f"({', '.join(sorted(ENVELOPE_KEYS))})")
        return self._v

    def add_flag(self, name: str, reason: str, rejects: bool = True) -> None:
        self._open(f"add_flag({name!r})")["flags"].append({"name": name, "rejects": rejects, "reason": reason})

    def set_status(self, status: str, reason: str = "") -> None:
        """The outcome so far; an empty reason leaves the line to `finalize` (or to an earlier phase's)."""
        v = self._open(f"set_status({status!r})")
        if status not in STATUSES:
            raise ValueError(f"verdict status {status!r}: expected one of {', '.join(STATUSES)}")
        v["status"] = status
        if reason:
            v["reason"] = reason

    def set_reason(self, reason: str) -> None:
        self._open("set_reason")["reason"] = reason

    def set_correct(self, correct: bool | None) -> None:
        self._open("set_correct")["correct"] = correct

    def fail_check(self, check: str) -> None:
        """The check that failed (values, shape, other_shape:values, ...)."""
        self._open("fail_check")["failed_check"] = check

    def reject(self, flag: str, reason: str) -> None:
        """Rejected outright by a rejecting flag (tampering, a protocol violation): not correct, whatever it computed."""
        self.add_flag(flag, reason)
        v = self._open("reject")
        v["status"], v["correct"], v["failed_check"] = "rejected", False, flag

    def set_error(self, text: str) -> None:
        self._open("set_error")["error"] = text  # type: ignore[typeddict-unknown-key]

    def set_compile(self, *, compiled: bool | None = None, seconds: float | None = None,
                    message: str | None = None) -> None:
        """What the build said; a field left None is unchanged."""
        v = self._open("set_compile")
        if compiled is not None:
            v["compiled"] = compiled
        if seconds is not None:
            v["compile_seconds"] = seconds
        if message is not None:
            v["compiler_message"] = message

    def add_trial(self, trial: dict[str, Any]) -> None:
        self._open("add_trial")["trials"].append(dict(trial))

    def tag_trials(self, since: int, tag: dict[str, Any]) -> None:
        """Mark the trials recorded from index `since` on (the variant they ran: other shape, other init)."""
        for t in self._open("tag_trials")["trials"][since:]:
            t.update(tag)

    def set_timing(self, name: str, stats: dict[str, Any]) -> None:
        """A timing: candidate, eager or compile (median_ms, iqr_ms, spread_pct, reps, ... or error)."""
        if name not in ("candidate", "eager", "compile"):
            raise ValueError(f"verdict timing {name!r}: expected candidate, eager or compile")
        self._open(f"set_timing({name!r})")["timing"][name] = stats

    def warn(self, text: str) -> None:
        """A warning: a fact a reader should see that changes no status."""
        self._open("warn").setdefault("warnings", []).append(text)

    def time_phase(self, name: str, seconds: float | None) -> None:
        self._open("time_phase").setdefault("phase_seconds", {})[name] = seconds  # type: ignore[typeddict-item]

    def record(self, **facts: Any) -> None:
        """Plain facts of the evaluation (FACT_KEYS); a key outside them has its own method or is no verdict key."""
        v = self._open(f"record({', '.join(facts)})")
        unknown = set(facts) - FACT_KEYS
        if unknown:
            raise KeyError(f"verdict facts {sorted(unknown)}: not in verdict.FACT_KEYS; use the builder's method "
                           "for that key, or add it to FACT_KEYS and the Verdict schema")
        v.update(facts)  # type: ignore[typeddict-item]

    def attach_baseline(self, baseline: dict[str, Any] | None) -> None:
        """The eager/torch.compile timings of the task's reference (measured in a sandbox of their own and handed
        to this job by the parent): the speedups, a warning when the baseline failed, its unreliable timings.
        A paired eager figure (timed beside the candidate) gives its speedup with no baseline job at all."""
        paired = bool((self._v["timing"].get("eager") or {}).get("paired"))
        if not baseline and not paired:
            return
        baseline = baseline or {"status": "accepted", "timing": {}}
        v = self._open("attach_baseline")
        for name in ("eager", "compile"):
            theirs = (baseline.get("timing") or {}).get(name)
            if theirs is None:
                continue
            ours = v["timing"].get(name)
            if isinstance(ours, dict) and ours.get("paired"):  # timed beside the candidate: the fair figure
                if isinstance(theirs, dict) and theirs.get("median_ms") is not None:
                    ours["separate_median_ms"] = theirs["median_ms"]
                continue
            v["timing"][name] = theirs
        cand = (v["timing"].get("candidate") or {}).get("median_ms")
        for name, field_name in (("eager", "speedup_vs_eager"), ("compile", "speedup_vs_compile")):
            ref = (v["timing"].get(name) or {}).get("median_ms")
            if cand and ref:
                v[field_name] = round(ref / cand, 4)  # type: ignore[literal-required]
        if baseline.get("status") != "accepted":
            v.setdefault("warnings", []).append(f"baseline timing failed: {baseline.get('reason')}")
        status = self._settled_status()
        for flag in baseline.get("flags") or []:
            if flag.get("name") == "timing_unreliable" and status in ("accepted", "rejected"):
                self.add_flag("timing_unreliable", flag["reason"], rejects=False)
        if status == "accepted":
            v["reason"] = ""  # the line is written with the speedups, by finalize

    def identify(self, identity: dict[str, Any] | None, candidate_source: str = "", task_source: str = "") -> None:
        """The store's key, the kind and the device the parent files this verdict under (from the job); a
        candidate's verdict also names the sources it judged by their hashes."""
        if not identity:
            return
        v = self._open("identify")
        kind = identity.get("kind")
        if kind not in KINDS:
            raise ValueError(f"job field identity.kind {kind!r}: expected one of {', '.join(KINDS)}")
        v["key"], v["kind"] = str(identity["key"]), kind
        if kind == "candidate":
            v["candidate_sha256"], v["task_sha256"] = _sha(candidate_source), _sha(task_source)
            v["device_name"] = str(identity.get("device_name") or "")

    def finalize_job(self, job: dict[str, Any]) -> Verdict:
        """Finalize with what the job brought: its baseline's timings (the speedups) and its identity."""
        self.attach_baseline(job.get("baseline"))
        self.identify(job.get("identity"), str(job.get("candidate_source") or ""), str(job.get("task_source") or ""))
        return self.finalize()

    def _settled_status(self) -> str:
        v = self._v
        if v["status"] in ("accepted", "incorrect") and v["correct"]:
            return "rejected" if rejecting_flags(v) else "accepted"
        return v["status"]

    def finalize(self) -> Verdict:
        """Settle status/accepted from the facts gathered, write the one-line reason, and seal: once."""
        v = self._open("finalize")
        v["status"] = self._settled_status()
        v["accepted"] = v["status"] == "accepted"
        if not v["reason"]:
            v["reason"] = reason_line(v)
        self._sealed = True
        return copy.deepcopy(v)


def with_envelope(verdict: Verdict | dict[str, Any], **envelope: Any) -> dict[str, Any]:
    """A finalized verdict with what only the parent knows beside it (ENVELOPE_KEYS), as one new dict: the
    wire and store format of before, without writing into the verdict."""
    unknown = set(envelope) - ENVELOPE_KEYS
    if unknown:
        raise KeyError(f"envelope keys {sorted(unknown)}: not in verdict.ENVELOPE_KEYS; a fact the checker can "
                       "know belongs in the job and the VerdictBuilder")
    return {**verdict, **envelope}


def rejecting_flags(verdict: Verdict | dict[str, Any]) -> list[Flag]:
    return [f for f in verdict["flags"] if f.get("rejects")]


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
