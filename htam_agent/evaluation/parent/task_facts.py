"""A task's facts (sizes, derived overrides, footprint per size: tasks/facts.py) for the parent, without torch in
the parent unless it is there already.

Measured on the 2-core VM (bundled leaky ReLU, small): the parent held 272 MB PSS after it ran the task file to
decide the size, against 16 MB before; a cpp verdict's processes together are budgeted 2.5 x the task's footprint
+ 1 GiB (issue 36), and the parent's torch was a quarter of that for a small task. So where torch is not loaded,
the facts come from a process of their own that exits before any job starts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

TIMEOUT_S = 300.0  # a task file's import and a meta-device forward per size; a derivation measures nothing here


@dataclass(frozen=True)
class TaskFacts:
    derived: dict[str, Any] | None = None  # overrides for sizes without a dict (None: the file has both dicts)
    has_size: dict[str, bool] = field(default_factory=dict)  # small / alt
    sizes: tuple[str, ...] | None = None  # None: the file could not be loaded (the checker will say why)
    footprint_bytes: dict[str, int | None] = field(default_factory=dict)

    def has(self, size: str) -> bool:
        return size == "default" or bool(self.has_size.get(size))

    @classmethod
    def of(cls, raw: dict[str, Any]) -> TaskFacts:
        return cls(derived=raw.get("derived"), has_size=dict(raw.get("has_size") or {}),
                   sizes=None if raw.get("sizes") is None else tuple(raw["sizes"]),
                   footprint_bytes=dict(raw.get("footprint_bytes") or {}))


def task_facts(source: str, path: str, in_process: bool | None = None) -> TaskFacts:
    """The facts of one task source; `in_process` None: in this process when torch is loaded here already.
    Should their own process fail (killed, out of memory, a timeout), they are found here after all: a size
    decided without them could be the wrong one (a CPU task run at its full size)."""
    if in_process is None:
        in_process = "torch" in sys.modules
    if not in_process:
        facts = _in_own_process(source, path)
        if facts is not None:
            return facts
    from ..tasks.facts import task_facts as compute

    return TaskFacts.of(compute(source, path))


def _in_own_process(source: str, path: str) -> TaskFacts | None:
    from .pool import scrubbed_env

    try:
        proc = subprocess.run([sys.executable, "-m", "htam_agent.evaluation.tasks.facts"],
                              input=json.dumps({"source": source, "path": path}), capture_output=True, text=True,
                              env=scrubbed_env(), timeout=TIMEOUT_S)
        if proc.returncode == 0:
            return TaskFacts.of(json.loads(proc.stdout))
    except (subprocess.TimeoutExpired, OSError, ValueError):
        pass
    return None


__all__ = ["TaskFacts", "task_facts"]
