"""The one reader of a verdict: what it says as text (for a person, for the LLM, for a tool's answer), what the
memory records for it (its status), and the figures a report shows.

Every caller reads verdicts through `Readout` so that "compiled?", "near the roofline?" and "how fast?" have one
answer each. Verdicts may come from the store or another host, so the reader tolerates missing or malformed
fields (it never raises on a verdict). Standard library only, like the rest of the evaluator.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..common.verdict import Verdict

#: a best candidate at this fraction of the roofline floor or more is "near_roofline" for the memory
NEAR_ROOFLINE = 0.7

# NVRTC and Triton compile at the first launch, so the evaluator reports their compiler errors as errors of
# the first call; for the memory and the prompts they are compile errors all the same.
SLOW_BUILD_S = 20.0  # a CUDA build this long is told the fast form (a fast-form build takes ~3 s)
_JIT_COMPILE_ERRORS = ("Kernel compilation failed", "CompilationError", "nvrtc: error", "NVRTC_ERROR")


def _num(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _stats_text(stats: dict[str, Any] | None) -> str:
    if not stats or "median_ms" not in stats:
        return (stats or {}).get("error", "-")[:80] if stats else "-"
    return (f"{stats['median_ms']:.4f} ms (IQR {stats['iqr_ms']:.4f}, spread {stats['spread_pct']:.1f}%, "
            f"min {stats['min_ms']:.4f}, n={stats['reps']})")


class Readout:
    """Read one verdict (None reads as "no verdict recorded")."""

    def __init__(self, verdict: Verdict | dict[str, Any] | None) -> None:
        self.v: dict[str, Any] = dict(verdict) if isinstance(verdict, dict) else {}

    # -- facts --------------------------------------------------------------------------------------------
    @property
    def recorded(self) -> bool:
        """A verdict was given (an empty or missing one reads as not recorded)."""
        return bool(self.v)

    @property
    def no_code(self) -> bool:
        """The reply had no candidate, so nothing was evaluated (the gateway's `no_code` verdict)."""
        return bool(self.v.get("no_code"))

    @property
    def not_evaluated(self) -> bool:
        """No device and no stored verdict: says nothing about the candidate, so the memory skips it."""
        return bool(self.v.get("not_evaluated"))

    @property
    def device_label(self) -> str | None:
        """The device's name: the store's `device_name`, else the checker's `device.name`."""
        dev = self.v.get("device")
        name = self.v.get("device_name") or (dev.get("name") if isinstance(dev, dict) else None)
        return str(name) if name else None

    @property
    def task(self) -> str:
        return str(self.v.get("task") or "")

    @property
    def backend(self) -> str:
        return str(self.v.get("backend") or "")

    @property
    def size(self) -> str | None:
        """The size the task ran at ("small", "default", ...); None when the verdict does not say."""
        size = self.v.get("size")
        return str(size) if size else None

    @property
    def seed(self) -> int | None:
        """The secret input seed, revealed after the evaluation (None when the verdict has none)."""
        seed = self.v.get("seed")
        return seed if isinstance(seed, int) and not isinstance(seed, bool) else None

    @property
    def bound(self) -> str | None:
        """The roofline's bound (memory or compute), None when not known."""
        bound = _dict(self.v.get("roofline")).get("bound")
        return bound if bound in ("memory", "compute") else None

    @property
    def kind(self) -> str:
        """candidate or baseline (a verdict without the field is a candidate's)."""
        return str(self.v.get("kind") or "candidate")

    @property
    def candidate_path(self) -> str | None:
        """The candidate file a batch line was evaluated from (`python -m htam_agent.evaluation batch`)."""
        path = self.v.get("candidate_path")
        return str(path) if path else None

    @property
    def failed_check(self) -> str | None:
        """The check that failed (values, shape, other_shape:values, timer_tampering, ...)."""
        check = self.v.get("failed_check")
        return str(check) if check else None

    def flags_that_reject(self, rejects: bool = True) -> list[str]:
        """Names of the rejecting flags (or, with rejects=False, of the warnings), in order."""
        flags = self.v.get("flags") if isinstance(self.v.get("flags"), list) else []
        return [str(f.get("name", "?")) for f in flags if isinstance(f, dict) and bool(f.get("rejects")) == rejects]

    @property
    def failed_trials(self) -> list[dict[str, Any]]:
        """The trials that ran and failed, in order (each: trial, check, max_abs_err, detail)."""
        return [t for t in self.v.get("trials") or [] if isinstance(t, dict) and t.get("passed") is False]

    @property
    def status(self) -> str:
        return str(self.v.get("status") or "unknown")

    @property
    def accepted(self) -> bool:
        return bool(self.v.get("accepted"))

    @property
    def reason(self) -> str:
        return str(self.v.get("reason") or "").strip()

    @property
    def speedup_vs_eager(self) -> float | None:
        return _num(self.v.get("speedup_vs_eager"))

    @property
    def speedup_vs_compile(self) -> float | None:
        return _num(self.v.get("speedup_vs_compile"))

    @property
    def roofline_fraction(self) -> float | None:
        return _num(_dict(self.v.get("roofline")).get("fraction"))

    @property
    def flag_names(self) -> list[str]:
        flags = self.v.get("flags") or []
        return [str(f.get("name", f)) if isinstance(f, dict) else str(f) for f in flags]

    def median_ms(self, name: str = "candidate") -> float | None:
        return _num(_dict(_dict(self.v.get("timing")).get(name)).get("median_ms"))

    @property
    def failed_to_compile(self) -> bool:
        if self.status in ("compile_error", "invalid_candidate"):
            return True
        text = f"{self.reason} {self.v.get('compiler_message') or ''}"
        return self.status == "runtime_error" and any(m in text for m in _JIT_COMPILE_ERRORS)

    @property
    def memory_status(self) -> str:
        """The memory's status vocabulary (memory.schema.MEMORY_STATUSES) for this verdict."""
        if self.accepted:
            frac = self.roofline_fraction
            return "near_roofline" if frac is not None and frac >= NEAR_ROOFLINE else "correct_slow"
        return "compile_error" if self.failed_to_compile else "incorrect"

    def facts(self) -> dict[str, Any] | None:
        """Timings and roofline for reports (RunResult.best_facts): candidate_ms, eager_ms, compile_ms (medians),
        floor_ms, bound, bandwidth_GBps, fp32_tflops, device; None when the verdict has none of them."""
        roof = _dict(self.v.get("roofline"))
        device = self.device_label
        bound = roof.get("bound") if roof.get("bound") in ("memory", "compute") else None
        facts = {"candidate_ms": self.median_ms("candidate"), "eager_ms": self.median_ms("eager"),
                 "compile_ms": self.median_ms("compile"), "floor_ms": _num(roof.get("floor_ms")), "bound": bound,
                 "bandwidth_GBps": _num(roof.get("bandwidth_GBps")), "fp32_tflops": _num(roof.get("fp32_tflops")),
                 "device": device}
        return facts if any(v is not None for v in facts.values()) else None

    # -- text -----------------------------------------------------------------------------------------------
    def brief(self) -> str:
        """One short paragraph for the LLM: status, speedups, median, roofline fraction and bound, the reason."""
        if not self.v:
            return "no verdict recorded"
        parts = [f"status {self.status}"]
        if (eager := self.speedup_vs_eager) is not None:
            parts.append(f"{eager:.2f}x vs eager PyTorch")
        if (comp := self.speedup_vs_compile) is not None:
            parts.append(f"{comp:.2f}x vs torch.compile")
        if (median := self.median_ms()) is not None:
            parts.append(f"median {median:.4g} ms")
        if (fraction := self.roofline_fraction) is not None:
            bound = _dict(self.v.get("roofline")).get("bound")
            parts.append(f"{100 * fraction:.0f}% of the roofline" + (f" ({bound}-bound)" if bound else ""))
        if names := self.flag_names:
            parts.append("flags: " + ", ".join(names))
        text = "; ".join(parts)
        text += f". Evaluator: {self.reason}" if self.reason else ""
        return text + (f" {self.build_hint}" if self.build_hint else "")

    @property
    def build_hint(self) -> str:
        """For a CUDA build that took long, what builds fast (issue 21); empty otherwise."""
        secs = _num(self.v.get("build_seconds"))
        if secs is None:
            secs = _num(self.v.get("compile_seconds"))
        if self.v.get("backend") != "cuda" or secs is None or secs < SLOW_BUILD_S:
            return ""
        return (f"Build: {secs:.0f} s (torch headers in a load_inline cuda_sources are parsed three times). The "
                'fast form builds in about 3 s: extern "C" __global__ kernels without torch headers, launched '
                "through the fast CUDA launcher of the format section.")

    def outcome(self) -> str:
        """One line for a list of earlier attempts: the speedup when accepted, else the status and the reason."""
        if not self.v:
            return "no verdict recorded"
        if self.accepted:
            parts = ["accepted"]
            if (eager := self.speedup_vs_eager) is not None:
                parts.append(f"{eager:.2f}x vs eager")
            if (fraction := self.roofline_fraction) is not None:
                parts.append(f"{100 * fraction:.0f}% of the roofline")
            return ", ".join(parts)
        reason = " ".join(self.reason.split())
        return f"{self.status}: {reason[:200]}" if reason else self.status

    def feedback(self) -> str:
        """What a repair prompt is told: status, reason, and the tail of the compiler's output."""
        parts = [f"status: {self.v.get('status')}", self.reason, self.build_hint]
        msg = self.v.get("compiler_message") or ""
        if msg:
            parts.append("compiler output (tail):\n" + msg[-3000:])
        return "\n".join(p for p in parts if p)

    def store_line(self) -> str:
        """One line of `htam verdicts list`: key, task, backend, device, kind, status, speedup."""
        v, sp = self.v, self.speedup_vs_eager
        return (f"{str(v.get('key') or '')[:12]}  {self.task:<32} {str(v.get('backend') or ''):<7} "
                f"{str(v.get('device_name') or '')[:24]:<24} {str(v.get('kind') or 'candidate'):<9} "
                f"{str(v.get('status') or ''):<17} {'' if sp is None else f'{sp:.2f}x'}")

    def tool_answer(self) -> str:
        """The compact JSON a LangChain tool answers with (the full verdict travels as the artifact)."""
        keep = {k: self.v.get(k) for k in ("status", "accepted", "reason", "speedup_vs_eager", "speedup_vs_compile")}
        roof = _dict(self.v.get("roofline"))
        if roof:
            keep["roofline_fraction"] = roof.get("fraction")
            keep["bound"] = roof.get("bound")
        keep["flags"] = self.flag_names
        return json.dumps(keep, default=str)

    def text(self) -> str:
        """The full human-readable verdict (`htam eval`, the batch CLI): plain text, no rich on a bare host."""
        v = self.v
        dev = _dict(v.get("device"))
        lines = [
            f"task      {v.get('task')}  (size {v.get('size')}, backend {v.get('backend')})",
            f"device    {dev.get('name', v.get('device_name', '?'))}",
            f"status    {self.status.upper()}" + ("  (cached verdict)" if v.get("cached") else ""),
            f"reason    {v.get('reason', '')}",
        ]
        if v.get("compile_seconds") is not None:
            lines.append(f"compile   {v['compile_seconds']:.1f} s")
        for t in v.get("trials", []):
            mark = "ok  " if t.get("passed") else "FAIL"
            extra = t.get("skipped") or (f"max abs err {t['max_abs_err']:.3g}"
                                         if t.get("max_abs_err") is not None else "")
            lines.append(f"  {mark} {t['trial']}: {extra}" + ("" if t.get("passed") else f"  {t.get('detail', '')}"))
        timing = _dict(v.get("timing"))
        for name in ("candidate", "eager", "compile"):
            if name in timing:
                lines.append(f"{name:<9} {_stats_text(timing[name])}")
        if v.get("speedup_vs_eager") is not None:
            lines.append(f"speedup   {v['speedup_vs_eager']:.3f}x vs eager"
                         + (f", {v['speedup_vs_compile']:.3f}x vs torch.compile" if v.get("speedup_vs_compile")
                            else ""))
        for f in v.get("flags", []):
            lines.append(f"flag      {f['name']} ({'rejects' if f['rejects'] else 'warning'}): {f['reason']}")
        if self.status == "compile_error" and v.get("compiler_message"):
            lines.append("compiler output (tail):")
            lines += ["  " + ln for ln in v["compiler_message"].strip().splitlines()[-25:]]
        return "\n".join(lines)
