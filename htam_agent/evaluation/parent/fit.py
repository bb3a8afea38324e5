"""Does the task fit this device at the size asked? Said before anything runs (issue 36).

A verdict holds at most MEMORY_FACTOR x the task's footprint (inputs + parameters + one output, counted on the
meta device: tasks/footprint.py) plus 1 GiB for its processes (docs/evaluation.md, "Memory"). Where that is more
than the device's free memory (the GPU's, or the host's available RAM for the CPU backends), the evaluation
would end in a harness out-of-memory that says nothing about the candidate; so the evaluator runs the task at
the largest of its sizes that fits (default, then small) and the verdict names the size and why, or, where none
fits, says so up front. `EvalOptions.fit=False` (`--no-fit`) runs the size asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from htam_agent.backend_registry import is_cpu

from ..common import gpu
from .task_facts import TaskFacts

MEMORY_FACTOR = 2.5
PROCESSES_BYTES = 1 << 30
ORDER = ("default", "small")  # largest first


@dataclass(frozen=True)
class Fit:
    asked: str
    size: str  # what runs
    need_bytes: int | None  # at the size asked
    free_bytes: int | None

    def note(self) -> str | None:
        """The verdict's warning when the size was changed, None otherwise."""
        if self.need_bytes is None or self.free_bytes is None or self.need_bytes <= self.free_bytes:
            return None
        if self.size == self.asked:
            return (f"the task at size '{self.asked}' needs about {self.need_bytes / 2**30:.1f} GiB ({MEMORY_FACTOR} x "
                    f"its footprint + 1 GiB) and this device has {self.free_bytes / 2**30:.1f} GiB free, and no smaller "
                    "size fits: an out-of-memory of the evaluator is the device's, never the candidate's")
        return (f"the task at size '{self.asked}' needs about {self.need_bytes / 2**30:.1f} GiB ({MEMORY_FACTOR} x its "
                f"footprint + 1 GiB) and this device has {self.free_bytes / 2**30:.1f} GiB free: evaluated at size "
                f"'{self.size}' instead (--no-fit runs the size asked)")

    def as_dict(self) -> dict[str, Any]:
        return {"asked": self.asked, "size": self.size, "need_bytes": self.need_bytes, "free_bytes": self.free_bytes}


def free_bytes(backend: str, device_index: int = 0) -> int | None:
    """Free memory where the task's tensors live: the host's MemAvailable for the CPU backends, the GPU's free
    memory otherwise, from NVML (None when it cannot be read). Not torch's `mem_get_info`: that initialises CUDA
    in the parent, a context of its own (hundreds of MB of the device, and a second or so, on every `eval`)."""
    if is_cpu(backend):
        try:
            with open("/proc/meminfo") as f:
                for line in f:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) << 10
        except OSError:
            return None
        return None
    return gpu.free_bytes(device_index)


def need_bytes(footprint_bytes: int | None) -> int | None:
    """What a verdict may hold for a task of this footprint (None: unknown)."""
    return None if footprint_bytes is None else int(MEMORY_FACTOR * footprint_bytes) + PROCESSES_BYTES


def choose(asked: str, backend: str, facts: TaskFacts, device_index: int = 0) -> Fit:
    """The size to run: `asked` when it fits (or cannot be measured), else the largest smaller size that fits."""
    free = free_bytes(backend, device_index)
    need = need_bytes(facts.footprint_bytes.get(asked))
    if free is None or need is None or need <= free or asked not in ORDER:
        return Fit(asked, asked, need, free)
    for size in ORDER[ORDER.index(asked) + 1:]:
        if size in (facts.sizes or (asked,)):
            smaller = need_bytes(facts.footprint_bytes.get(size))
            if smaller is not None and smaller <= free:
                return Fit(asked, size, need, free)
    return Fit(asked, asked, need, free)


__all__ = ["MEMORY_FACTOR", "Fit", "choose", "free_bytes", "need_bytes"]
