"""A task's facts (sizes, derived overrides, footprint per size: tasks/facts.py) for the parent, without torch in
the parent unless it is there already.

Measured on the 2-core VM (bundled leaky ReLU, small): the parent held 272 MB PSS after it ran the task file to
decide the size, against 16 MB before; a cpp verdict's processes together are budgeted 2.5 x the task's footprint
+ 1 GiB (issue 36), and the parent's torch was a quarter of that for a small task. So where torch is not loaded,
the facts come from a process of their own that exits before any job starts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common import paths

FACTS_VERSION = 1  # bump when tasks/facts.py finds something else
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


def task_facts(source: str, path: str, in_process: bool | None = None, use_cache: bool = True) -> TaskFacts:
    """The facts of one task source; `in_process` None: in this process when torch is loaded here already.
    Should their own process fail (killed, out of memory, a timeout), they are found here after all: a size
    decided without them could be the wrong one (a CPU task run at its full size). Kept on disk per content,
    path, torch and evaluator version (`cache_root()/task_facts`): an `eval` of a task seen before imports no
    torch for them at all."""
    key = _key(source, path)
    if use_cache and (hit := _read(key)) is not None:
        return hit
    if in_process is None:
        in_process = "torch" in sys.modules
    raw = None if in_process else _in_own_process(source, path)
    if raw is None:
        from ..tasks.facts import task_facts as compute

        raw = compute(source, path)
    _write(key, raw)
    return TaskFacts.of(raw)


def _key(source: str, path: str) -> str:
    from importlib import metadata

    from ..common.verdict import EVALUATOR_VERSION

    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "?"
    text = "\0".join((str(FACTS_VERSION), EVALUATOR_VERSION, torch_version, path, source))
    return hashlib.sha256(text.encode()).hexdigest()


def _cache_dir() -> Path:
    return paths.cache_root() / "task_facts"


def _read(key: str) -> TaskFacts | None:
    try:
        raw = json.loads((_cache_dir() / f"{key}.json").read_text())
        return TaskFacts.of(raw) if isinstance(raw, dict) and raw.get("key") == key else None
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _write(key: str, raw: dict[str, Any]) -> None:
    d = _cache_dir()
    tmp = d / f".{key}.{os.getpid()}.tmp"
    try:
        d.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({**raw, "key": key}))
        os.replace(tmp, d / f"{key}.json")
    except OSError:  # a read-only or full cache only costs the facts again next time
        with contextlib.suppress(OSError):
            tmp.unlink()


def _in_own_process(source: str, path: str) -> dict[str, Any] | None:
    from .pool import scrubbed_env

    try:
        proc = subprocess.run([sys.executable, "-m", "htam_agent.evaluation.tasks.facts"],
                              input=json.dumps({"source": source, "path": path}), capture_output=True, text=True,
                              env=scrubbed_env(), timeout=TIMEOUT_S)
        if proc.returncode == 0:
            raw = json.loads(proc.stdout)
            return raw if isinstance(raw, dict) else None
    except (subprocess.TimeoutExpired, OSError, ValueError):
        pass
    return None


__all__ = ["TaskFacts", "task_facts"]
