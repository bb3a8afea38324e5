"""The checker's state for one evaluation: the job, the verdict being assembled, the sandboxes, the phase and its
deadline (`Run`), and the events the parent reads on the checker's pipe (`Events`). No torch here: the steps
(`phases`, `timed_calls`) and the job's entry (`job`) all take a `Run`."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from ..common.verdict import VerdictBuilder
from . import heap
from .sandbox_client import SandboxClient

COMPILE_PHASES = ("start", "compile", "baseline_compile")  # torch.compile's own compile counts as one


class Events:
    """JSON lines to the parent on a pipe only the checker holds: phase changes, then the verdict."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def emit(self, event: dict[str, Any]) -> None:
        if self.fd is None:
            return
        data = (json.dumps(event, default=str) + "\n").encode()
        while data:
            n = os.write(self.fd, data)
            data = data[n:]


@dataclass
class Run:
    """One evaluation: the job, the verdict being assembled, and what the phases share."""

    job: dict[str, Any]
    verdict: VerdictBuilder
    events: Events
    sandbox: SandboxClient | None
    backend: Any = None
    device: Any = None
    task: Any = None
    ref: Any = None
    seed: int = 0
    phase: str = "start"
    deadline: float = 0.0
    seconds: dict[str, float] = field(default_factory=dict)
    launches: int = 0
    silent_calls: list[str] = field(default_factory=list)  # compared or timed calls that launched no kernel
    calibration: list[float] = field(default_factory=list)
    ref_sandbox: SandboxClient | None = None  # the reference's own sandbox, for paired timing (`pairs`)
    ref_run: Run | None = None
    ref_mutates: bool | None = None  # whether the reference writes its inputs (None: not known yet)
    memory_cap: dict[str, Any] | None = None  # what caps the candidate's sandbox (phases.phase_compile)
    memory_cap_footprint: int | None = None
    in_place: bool | None = None  # timed CPU outputs read where they lie (timed_calls.in_place; None: not probed)
    _since: float = field(default_factory=time.perf_counter)

    @property
    def tier(self) -> str:
        return self.job.get("tier", "default")

    @property
    def checks(self) -> bool:
        return self.tier != "bare"

    def enter(self, name: str) -> None:
        heap.trim()  # what the last phase freed goes back before the next one grows (issue 36)
        now = time.perf_counter()
        self.seconds[self.phase] = round(self.seconds.get(self.phase, 0.0) + now - self._since, 3)
        self._since, self.phase = now, name
        limit = self.job.get("compile_timeout_s", 600.0) if name in COMPILE_PHASES else self.job.get(
            "run_timeout_s", 180.0)
        self.deadline = time.monotonic() + float(limit)
        self.events.emit({"event": "phase", "phase": name, "since": time.time(), "limit_s": limit})

    def left(self) -> float:
        return max(0.001, self.deadline - time.monotonic())

    @property
    def sb(self) -> SandboxClient:
        assert self.sandbox is not None
        return self.sandbox

    def sync(self) -> None:
        self.backend.synchronize()

    def rejected(self) -> bool:
        return self.verdict.rejected

