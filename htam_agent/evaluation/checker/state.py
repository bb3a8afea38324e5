"""The checker's state for one evaluation: the job, the verdict being assembled, the sandboxes, the phase and its
deadline (`Run`), and the events the parent reads on the checker's pipe (`Events`). No torch here: the steps
(`phases`, `timed_calls`) and the job's entry (`job`) all take a `Run`."""

from __future__ import annotations

import json
import os
import resource
import time
from dataclasses import dataclass, field
from typing import Any

from ..common.verdict import VerdictBuilder
from . import heap
from .sandbox_client import SandboxClient

COMPILE_PHASES = ("start", "compile", "baseline_compile")  # torch.compile's own compile counts as one


def process_cpu(pid: int) -> tuple[float, float] | None:
    """(user, system) CPU seconds of a process and its threads so far, from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


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
    costs: dict[str, dict[str, Any]] = field(default_factory=dict)  # per phase: CPU and full-size traffic
    _since: float = field(default_factory=time.perf_counter)
    _mark: dict[str, float] = field(default_factory=dict)

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
        self.account()
        self._since, self.phase = now, name
        limit = self.job.get("compile_timeout_s", 600.0) if name in COMPILE_PHASES else self.job.get(
            "run_timeout_s", 180.0)
        self.deadline = time.monotonic() + float(limit)
        self.events.emit({"event": "phase", "phase": name, "since": time.time(), "limit_s": limit})

    def _measures(self) -> dict[str, float]:
        """Running totals: this process's CPU, each sandbox's (from /proc: they are other users' processes, not
        children it waits for), and what the sandbox clients counted (`sandbox_client.COUNTS`)."""
        ru = resource.getrusage(resource.RUSAGE_SELF)
        got = {"checker_user_s": ru.ru_utime, "checker_sys_s": ru.ru_stime}
        for label, sb in (("sandbox", self.sandbox), ("reference", self.ref_sandbox)):
            if sb is None:
                continue
            cpu = process_cpu(sb.proc.pid)
            if cpu is not None:
                got[f"{label}_user_s"], got[f"{label}_sys_s"] = cpu
            for key, n in sb.counts.items():
                got[key] = got.get(key, 0) + n
        return got

    def account(self) -> None:
        """Add what the phase so far cost to `costs[phase]` (the verdict's `phase_costs`): CPU seconds of each
        process and the full-size buffers made, refilled, sealed and read, so that a large verdict's time can be
        told apart by phase and by kind (issue 36). Called at each phase's end, and before a sandbox goes (its CPU cannot
        be read once it is gone). The reference's sandbox is counted from its first phase on."""
        now = self._measures()
        mine = self.costs.setdefault(self.phase, {})
        for key, value in now.items():
            delta = value - self._mark.get(key, 0.0 if key.startswith("checker") or not key.endswith("_s") else value)
            if delta > 0:
                mine[key] = round(mine.get(key, 0) + delta, 3) if key.endswith("_s") else int(mine.get(key, 0) + delta)
        self._mark = now

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

