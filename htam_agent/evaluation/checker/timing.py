"""Timing protocol: warm-up, cache flush before every call, device-wide sync, many repeats, median and spread.

The same function times eager PyTorch, torch.compile and the candidate, so their numbers are comparable.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ..backends.base import Backend


@dataclass
class TimingStats:
    median_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    iqr_ms: float
    spread_pct: float  # IQR / median, in percent
    host_median_ms: float  # wall time per call on the host, sync included (cross-check of the device timer)
    reps: int
    warmup: int

    def as_dict(self) -> dict[str, Any]:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def summarize(samples: list[float], host: list[float], warmup: int) -> TimingStats:
    s = sorted(samples)
    if len(s) >= 4:
        q = statistics.quantiles(s, n=4, method="inclusive")
        iqr = q[2] - q[0]
    else:
        iqr = s[-1] - s[0]
    med = statistics.median(s)
    return TimingStats(
        median_ms=med,
        mean_ms=statistics.fmean(s),
        min_ms=s[0],
        max_ms=s[-1],
        iqr_ms=iqr,
        spread_pct=100.0 * iqr / med if med > 0 else 0.0,
        host_median_ms=statistics.median(host),
        reps=len(s),
        warmup=warmup,
    )


@dataclass
class TimingPlan:
    target_s: float = 0.5  # total timed time to aim for
    min_reps: int = 10
    max_reps: int = 200
    warmup_s: float = 0.1
    min_warmup: int = 3


def time_calls(
    call: Callable[[int], Any],
    backend: Backend,
    plan: TimingPlan,
    keep: Callable[[int, Any], None] | None = None,
    before: Callable[[int, int | None], None] | None = None,
) -> TimingStats:
    """Time `call(i)` (i = rep index, so the caller can rotate fresh inputs) under the protocol.

    `keep(i, output)` lets the caller retain outputs of timed calls to re-check them afterwards; it runs
    right after the end stamp. `before(i, reps)` runs before each call, outside the timed window (before
    the synchronize and the flush): the caller changes the inputs there (reps is None during warm-up).
    """
    warm, t0 = 0, time.perf_counter()
    while warm < plan.min_warmup or time.perf_counter() - t0 < plan.warmup_s:
        if before is not None:
            before(warm, None)
        call(warm)
        backend.synchronize()
        warm += 1
        if warm >= 1000:
            break
    est_ms = max((time.perf_counter() - t0) * 1e3 / warm, 1e-3)
    reps = int(min(plan.max_reps, max(plan.min_reps, plan.target_s * 1e3 / est_ms)))

    samples: list[float] = []
    host: list[float] = []
    for i in range(reps):
        if before is not None:
            before(i, reps)
        backend.synchronize()
        # The flush is queued, not waited for: the start stamp lands when it ends, so host-side launch
        # work overlapping the flush is hidden, as in a model where the GPU is busy; launch overhead
        # longer than the flush still counts.
        backend.flush_cache()
        timer = backend.new_timer()
        h0 = time.perf_counter_ns()
        timer.start()
        out = call(i)
        timer.stop()  # synchronizes the whole device before the end stamp
        h1 = time.perf_counter_ns()
        if keep is not None:
            keep(i, out)
        samples.append(timer.elapsed_ms())
        host.append((h1 - h0) / 1e6)
        del out
    return summarize(samples, host, warm)
