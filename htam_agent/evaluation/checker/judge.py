"""The checker's judgements: outputs against the reference, the sandbox's evidence, and the wall-clock bound.

Pure functions over data the checker holds (its own tensors, the reference's outputs, replies already
validated by the client). Nothing here runs candidate code.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from ..common import observe
from ..common.verdict import VerdictBuilder
from . import correctness

SABOTAGE_WHY = {
    "nan": "stays correct when the results of the candidate's kernels are overwritten with NaN: it is computed "
           "elsewhere (a PyTorch path or a cache), not by the kernel",
    "identity": "stays correct when each of the candidate's kernels is replaced by a copy of its own input: the "
                "kernels compute nothing the output needs (PyTorch ops or a cache compute it, and a kernel only "
                "copies); a kernel must compute part of the result",
}

SABOTAGE_DONE = {"nan": "overwritten with NaN", "identity": "replaced by copies of their inputs"}

# The checker's clock bounds the candidate's reported times from below: a reported median under
# FACTOR x (checker's median round trip - calibrated overhead) - ABS_MS is flagged. Looser on the CPU, where
# spinning OpenMP pools and a busy scheduler delay the checker's wake-up by milliseconds.
WALL_BOUND = {"cuda": {"factor": 0.7, "abs_ms": 0.05}, "cpu": {"factor": 0.5, "abs_ms": 5.0}}

# The figure of record is the in-process median, believed only down to (1 - SLACK) x the checker's own
# per-call estimate (its median round trip minus the calibrated no-op's) less the standard errors of those
# two medians: a clock slowed inside the candidate's process gains at most this much.
RECORD_SLACK = {"cuda": 0.05, "cpu": 0.10}
# Granularity of the two clocks: a reported call longer than the checker's whole request by more is
# impossible for an honest process (the in-process window lies inside the checker's).
CLOCK_GRAIN_MS = 0.02


def check_facts(facts: list[dict[str, Any]], ref_out: Any) -> correctness.OutputCheck | None:
    """What the sandbox says about its outputs' types (a lazy subclass, a sparse or meta tensor...)."""
    import torch

    refs = observe.flatten_outputs(ref_out)
    if len(facts) != len(refs):
        return correctness.OutputCheck(False, "output_count",
                                       f"{len(facts)} outputs, the reference returns {len(refs)}")
    for i, (f, r) in enumerate(zip(facts, refs, strict=True)):
        prefix = f"output {i}: " if len(refs) > 1 else ""
        if not isinstance(r, torch.Tensor):
            continue
        if not isinstance(f, dict) or not f.get("tensor"):
            return correctness.OutputCheck(False, "not_a_tensor",
                                           f"{prefix}returned {f.get('type') if isinstance(f, dict) else '?'} "
                                           "where the reference returns a tensor")
        if not f.get("plain"):
            return correctness.OutputCheck(False, "not_a_plain_tensor",
                                           f"{prefix}returned a {f.get('type')} (a torch.Tensor subclass); "
                                           "return a plain torch.Tensor")
        if f.get("device") != r.device.type:
            return correctness.OutputCheck(False, "device", f"{prefix}output on {f.get('device')}, expected "
                                           f"{r.device.type}")
        if not f.get("strided"):
            return correctness.OutputCheck(False, "layout", f"{prefix}not a dense strided tensor")
    return None


def compare(ref_out: Any, cand_out: Any, facts: list[dict[str, Any]], device: Any,
            problem: str | None = None) -> correctness.OutputCheck:
    bad = check_facts(facts, ref_out)
    if bad is not None:
        return bad
    if problem is not None:
        return correctness.OutputCheck(False, "not_a_tensor", problem)
    return correctness.compare_outputs(ref_out, cand_out, device)


def untouched_outputs(ref_out: Any, out: Any, device: Any) -> list[int]:
    """Indices of floating outputs that still match the reference (after a sabotage run). Only whether each
    passes counts here, so the comparison stops at its first chunk out of tolerance (`quick`): a sabotaged
    output fails at once, and the worst element's search was a second pass over GiBs for a detail never shown."""
    import torch

    refs, outs = observe.flatten_outputs(ref_out), observe.flatten_outputs(out)
    return [i for i, (r, o) in enumerate(zip(refs, outs, strict=False))
            if isinstance(r, torch.Tensor) and r.is_floating_point() and isinstance(o, torch.Tensor)
            and correctness.compare_tensor(r, o, device, quick=True).passed]


def _quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))] if xs else 0.0


@dataclass
class WallClock:
    """The checker's own clock around each timed request (and around requests of a no-op with the same
    flush and hand-over, made before the candidate was imported, which calibrate what a request costs
    beyond the call)."""

    calibration: list[float]  # the checker's clock around each no-op request, ms
    walls: list[float]  # the checker's clock around each timed request, ms
    reported: list[float]  # the sandbox's reported time of each timed call, ms
    drain_ms: float = 0.0  # round trip of a synchronize after the last timed call

    def overhead_ms(self) -> float:
        return statistics.median(self.calibration) if self.calibration else 0.0

    def noise_ms(self) -> float:
        """The uncertainty of the two medians the estimate subtracts (about 0.93 IQR / sqrt(n) each)."""
        def se(xs: list[float]) -> float:
            return 0.93 * (_quantile(xs, 0.75) - _quantile(xs, 0.25)) / max(len(xs), 1) ** 0.5 if xs else 0.0

        return se(self.calibration) + se(self.walls)

    def allowance_ms(self) -> float:
        """Overhead beyond the call that a slow request may still hold (the gross bound's allowance)."""
        med = self.overhead_ms()
        return med + 3 * max(_quantile(self.calibration, 0.9) - med, 0.0) + CLOCK_GRAIN_MS

    def checker_ms(self) -> float:
        """The checker's estimate of one call: its median request minus the median no-op request."""
        return max(0.0, statistics.median(self.walls) - self.overhead_ms())

    def impossible(self) -> list[int]:
        """Calls whose reported time exceeds the checker's whole request around them."""
        return [i for i, (w, r) in enumerate(zip(self.walls, self.reported, strict=False)) if r > w + CLOCK_GRAIN_MS]

    def settle(self, stats: dict[str, Any], device_type: str) -> dict[str, Any]:
        """The timing of record: the in-process figures, with the median raised to the checker's bound when
        the in-process clock claims less than the checker can confirm."""
        if not self.walls or not self.reported or not self.calibration:
            return stats
        slack = RECORD_SLACK["cuda" if device_type == "cuda" else "cpu"]
        bound = (1 - slack) * (self.checker_ms() - self.noise_ms())
        out = dict(stats, in_process_median_ms=stats["median_ms"], checker_ms=round(self.checker_ms(), 4),
                   clock="in_process")
        if bound > stats["median_ms"]:
            out["median_ms"], out["clock"] = round(bound, 4), "checker"
        return out

    def beyond_call(self) -> tuple[float, float]:
        """What each request took beyond the call it reports (the checker's clock minus the in-process one,
        request by request: the call's own variation cancels), as its median and that median's standard
        error, ms."""
        d = [w - r for w, r in zip(self.walls, self.reported, strict=False)]
        if not d:
            return 0.0, 0.0
        return statistics.median(d), 0.93 * (_quantile(d, 0.75) - _quantile(d, 0.25)) / len(d) ** 0.5

    def record(self) -> dict[str, Any]:
        if not self.walls or not self.reported:
            return {}
        beyond, beyond_se = self.beyond_call()
        return {"checker_median_ms": round(statistics.median(self.walls), 4),
                "overhead_ms": round(self.overhead_ms(), 4), "noise_ms": round(self.noise_ms(), 4),
                "checker_call_ms": round(self.checker_ms(), 4),
                "overhead_allowance_ms": round(self.allowance_ms(), 4),
                "reported_median_ms": round(statistics.median(self.reported), 4),
                "beyond_call_ms": round(beyond, 4), "beyond_call_se_ms": round(beyond_se, 4),
                "drain_ms": round(self.drain_ms, 4), "calls": len(self.walls)}

    def findings(self, device_type: str) -> list[tuple[str, str]]:
        """(flag, reason) for what the checker's clock contradicts; nothing is added to a verdict here, so the
        caller can ask for a second timing before believing a finding (a busy machine makes one round trip
        slow now and then; a forged timer or deferred work is slow every time)."""
        if not self.walls or not self.reported:
            return []
        bound = WALL_BOUND["cuda" if device_type == "cuda" else "cpu"]
        allowance = self.allowance_ms()
        wall = statistics.median(self.walls)
        rep = statistics.median(self.reported)
        out = []
        if rep < bound["factor"] * (wall - allowance) - bound["abs_ms"]:
            out.append(("timing_below_wall_clock",
                        f"the candidate's process reported {rep:.4f} ms per call, but the checker's own clock saw "
                        f"{wall:.4f} ms per request of which at most {allowance:.4f} ms is overhead: the reported "
                        "times are not believed"))
        if self.drain_ms - allowance > max(bound["abs_ms"], 0.5 * wall, 1.0):  # a slow round trip is no work
            out.append(("work_after_return",
                        f"the device was still busy {self.drain_ms:.2f} ms after the last timed call returned; all "
                        "work must finish inside forward (join threads, synchronize side streams)"))
        return out

    def judge(self, verdict: VerdictBuilder, device_type: str,
              findings: list[tuple[str, str]] | None = None) -> None:
        """Record the clock's figures and flag the findings: this clock's own, or those the caller kept
        (the ones that recurred in a second timing). A reported call longer than the checker's request
        around it needs no second look: no load makes it happen."""
        if not self.walls or not self.reported:
            return
        verdict.record(wall_clock=self.record())
        bad = self.impossible()
        if bad and not verdict.has_flag("clock_below_reported"):
            i = bad[0]
            verdict.add_flag("clock_below_reported",
                     f"timed call {i}: the candidate's process reported {self.reported[i]:.4f} ms, but the checker's "
                     f"own clock saw the whole request take {self.walls[i]:.4f} ms ({len(bad)} such calls): "
                     "replies came out of order or the times were forged")
        for name, reason in self.findings(device_type) if findings is None else findings:
            if not verdict.has_flag(name):
                verdict.add_flag(name, reason)


def settle_pair(cand: dict[str, Any], cand_wall: WallClock, ref: dict[str, Any], ref_wall: WallClock,
                device_type: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The figures of record of a candidate and the reference timed beside it (interleaved): one estimator
    for both. Each side's in-process median stands, and the candidate's is believed only as far as the
    checker's clock confirms it: its requests may take longer beyond the reported call than the
    reference's did at the same moments (same protocol, same outputs) by at most RECORD_SLACK of its
    median plus the two medians' standard errors. Beyond that, the excess is time the candidate's clock
    hid, and it is added back (clock "checker")."""
    slack = RECORD_SLACK["cuda" if device_type == "cuda" else "cpu"]
    m_c, m_r = cand.get("in_process_median_ms", cand["median_ms"]), ref.get("in_process_median_ms", ref["median_ms"])
    (d_c, se_c), (d_r, se_r) = cand_wall.beyond_call(), ref_wall.beyond_call()
    excess = d_c - d_r
    tolerance = slack * m_c + se_c + se_r + CLOCK_GRAIN_MS
    out_c = dict(cand, median_ms=m_c, clock="in_process", beyond_call_ms=round(d_c, 4),
                 beyond_call_excess_ms=round(excess, 4), beyond_call_tolerance_ms=round(tolerance, 4))
    out_r = dict(ref, median_ms=m_r, clock="in_process", beyond_call_ms=round(d_r, 4))
    if excess > tolerance:
        out_c["median_ms"], out_c["clock"] = round(m_c + excess, 4), "checker"
    return out_c, out_r


def baseline_record(stats: dict[str, Any]) -> dict[str, Any]:
    """A baseline's figure of record: its in-process median, never lifted by the checker's floor. The floor
    stands guard against a candidate's forged clock; the reference's code is ours, and a floor lifted by a
    slow round trip would only bias every speedup measured against it (two of five H200 rounds of
    95_CrossEntropyLoss read 0.92-0.93 for that, 2026-12-04). The checker's estimate stays in the record."""
    m = stats.get("in_process_median_ms", stats["median_ms"])
    return dict(stats, median_ms=m, clock="in_process")


# IQR / median above which a timing is re-taken once, and then reported as unreliable (a warning): the
# machine was busy, or the call's own time varies (a spinning thread pool, frequency changes).
UNRELIABLE_SPREAD_PCT = {"cuda": 15.0, "cpu": 10.0}


def unreliable(stats: dict[str, Any], device_type: str) -> bool:
    spread = stats.get("spread_pct")
    return isinstance(spread, (int, float)) and spread > UNRELIABLE_SPREAD_PCT[
        "cuda" if device_type == "cuda" else "cpu"]


# Paired, what a speedup rests on is the ratio of the two medians taken at the same moments, not either
# side's spread: its standard error (each median's about 0.93 x IQR/median / sqrt(calls), combined) above
# this is re-taken once, and then flagged. Eager's own spread is 15-20% on the 2-core VM most of the time;
# with 50 calls a side that is a ratio error of about 2-3%, below the +-10-20% two processes of identical
# code differ by (docs/evaluation.md, "What no protocol removes"), which no re-timing in the same processes
# changes.
UNSTEADY_PAIR_PCT = 3.0


def pair_error_pct(cand: dict[str, Any], ref: dict[str, Any]) -> float:
    """The standard error of candidate median / reference median, in percent."""
    def se(stats: dict[str, Any]) -> float:
        spread, reps = stats.get("spread_pct"), stats.get("reps")
        ok = isinstance(spread, (int, float)) and isinstance(reps, int) and reps > 0
        return 0.93 * float(spread) / reps ** 0.5 if ok else float("inf")

    return (se(cand) ** 2 + se(ref) ** 2) ** 0.5


def unsteady_pair(cand: dict[str, Any], ref: dict[str, Any]) -> bool:
    return pair_error_pct(cand, ref) > UNSTEADY_PAIR_PCT


def flag_unsteady_pair(verdict: VerdictBuilder, cand: dict[str, Any], ref: dict[str, Any]) -> None:
    verdict.add_flag("timing_unreliable",
             f"the candidate's time over eager PyTorch's, timed beside each other, has a standard error of "
             f"{pair_error_pct(cand, ref):.1f}% even after re-timing (spreads {cand['spread_pct']:.0f}% and "
             f"{ref['spread_pct']:.0f}%): its speedups are not solid (a busy machine?)", rejects=False)


def flag_unreliable(verdict: VerdictBuilder, what: str, stats: dict[str, Any]) -> None:
    verdict.add_flag("timing_unreliable",
             f"{what}'s timing spread (IQR / median) was {stats['spread_pct']:.0f}% even after re-timing: its "
             "speedups are not solid (a busy machine?)", rejects=False)
