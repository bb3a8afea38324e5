"""A cap on the memory of the candidate's sandbox, sized from the task's footprint (issue 36; stdlib only).

Nothing bounded what a candidate's processes took of the host's memory: an honest kernel that also held many GiB
it never used was accepted, and on a shared host the kernel's OOM killer then chose among everyone's processes.
The checker caps its candidate's sandbox once the job is known (the sandbox is started before), before any
candidate code runs: `memory.max` of the sandbox's own cgroup where the host's cgroup v2 has the memory controller
(every process of the candidate together; an overrun is an OOM kill inside that group, counted in
`memory.events`), and `RLIMIT_DATA` on the sandbox process everywhere (inherited by what it starts; private
writable memory only, so the shared input buffers and sealed outputs are not counted; an overrun is an
allocation that fails, which torch reports as "can't allocate memory"). Either way the verdict is the
candidate's `out_of_memory`, and its reason names the cap.

The allowance: 4 x the task's footprint (inputs + parameters + one output) + 4 GiB, so an honest candidate's
inputs, weights, two live outputs, the sabotage's copies and a private compile (cc1plus with torch's precompiled
header maps ~2 GiB of private memory, each process under its own RLIMIT_DATA) fit with room to spare.
`HTAM_SANDBOX_MEMORY_MB` sets it (0: no cap).
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

FOOTPRINTS = 4
HEADROOM = 4 << 30


def allowance(footprint_bytes: int | None) -> int | None:
    """Bytes the candidate's processes may hold beyond what the sandbox held when capped; None: no cap."""
    env = os.environ.get("HTAM_SANDBOX_MEMORY_MB", "").strip()
    if env:
        try:
            mb = int(env)
        except ValueError as exc:
            raise ValueError(f"HTAM_SANDBOX_MEMORY_MB={env!r}: not a whole number of MB (0: no cap)") from exc
        return mb << 20 if mb > 0 else None
    if footprint_bytes is None:
        return None
    return FOOTPRINTS * footprint_bytes + HEADROOM


def _vm_data(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmData:"):
            return int(line.split()[1]) << 10
    raise OSError(f"/proc/{pid}/status has no VmData")


def cap_cgroup(allowed: int, cgroup_path: Path | None) -> str:
    """`memory.max` of the sandbox's cgroup at what the group holds now plus `allowed` (the checker writes it);
    "" where the host's cgroup v2 has no memory controller for it."""
    if cgroup_path is None or not (cgroup_path / "memory.max").exists():
        return ""
    try:
        current = int((cgroup_path / "memory.current").read_text())
        (cgroup_path / "memory.max").write_text(str(current + allowed))
        if (cgroup_path / "memory.swap.max").exists():
            (cgroup_path / "memory.swap.max").write_text("0")
        return f"cgroup memory.max {(current + allowed) >> 20} MB"
    except OSError:
        return ""


def cap_self(allowed: int) -> str:
    """This process's RLIMIT_DATA, soft and hard, at its data now plus `allowed` (the sandbox calls it on itself
    while still running only our code: lowering a limit needs no privilege, and with no CAP_SYS_RESOURCE left
    the candidate cannot raise it again; the checker may not set another user's limits)."""
    try:
        limit = _vm_data(os.getpid()) + allowed
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
        return f"RLIMIT_DATA {limit >> 20} MB"
    except (OSError, ValueError) as exc:
        return f"no RLIMIT_DATA ({type(exc).__name__}: {exc})"


def oom_kills(cgroup_path: Path | None) -> int:
    """OOM kills inside the sandbox's cgroup so far (0 where it has no memory controller)."""
    try:
        for line in (cgroup_path / "memory.events").read_text().splitlines():  # type: ignore[operator]
            if line.startswith("oom_kill "):
                return int(line.split()[1])
    except (OSError, TypeError, ValueError):
        pass
    return 0


__all__ = ["allowance", "cap_cgroup", "cap_self", "oom_kills"]
