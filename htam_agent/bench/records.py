"""The bench's results store: one JSON line per (task, method, seed, ...) under the bench folder.

A record is written as soon as its task finishes: one ``write`` of the whole line on an ``O_APPEND``
descriptor under an exclusive ``flock``, then ``fsync``. A ``kill -9`` therefore loses at most the tasks in
flight; a line torn by a crash mid-write (or a full disk) is skipped when reading, and the next append starts
on a fresh line. The latest record of a key wins, so a retried task simply appends again.

Resume and incremental runs are the same thing: a key with a ``done`` record is skipped; anything else (never
run, killed, or ``error``: the harness itself failed, e.g. the LLM endpoint was down) runs again.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

KEY_FIELDS = ("suite", "task", "method", "seed", "budget", "backend", "coder", "size")
RESULTS_FILE = "results.jsonl"


def record_key(rec: dict[str, Any]) -> tuple:
    """The identity of a result: who ran what, how (see KEY_FIELDS)."""
    return tuple(rec.get(k) for k in KEY_FIELDS)


def key_str(key: tuple) -> str:
    return "|".join("" if v is None else str(v) for v in key)


class RecordStore:
    """Append-only JSONL of bench records; safe for threads of one process and for several processes."""

    def __init__(self, bench_dir: str | Path) -> None:
        self.dir = Path(bench_dir).expanduser()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / RESULTS_FILE
        self._lock = threading.Lock()

    # -- writing -------------------------------------------------------------------------------------------
    def append(self, rec: dict[str, Any]) -> None:
        import fcntl

        missing = [k for k in KEY_FIELDS if k not in rec]
        if missing:
            raise ValueError(f"record lacks key field(s) {missing}")
        rec = dict(rec)
        rec.setdefault("written_at", time.time())
        line = (json.dumps(rec, default=str, sort_keys=True) + "\n").encode()
        with self._lock:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    line = b"\n" + line  # the previous writer died mid-line: never glue onto its fragment
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)  # releases the flock

    # -- reading -------------------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Every intact record in file order (torn or foreign lines are skipped)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        for raw in data.split(b"\n"):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict) and all(k in rec for k in KEY_FIELDS):
                yield rec

    def latest(self) -> dict[tuple, dict[str, Any]]:
        """The last record of every key."""
        out: dict[tuple, dict[str, Any]] = {}
        for rec in self:
            out[record_key(rec)] = rec
        return out

    def done_keys(self) -> set[tuple]:
        return {k for k, r in self.latest().items() if r.get("status") == "done"}

    def select(self, keys: Iterable[tuple] | None = None) -> list[dict[str, Any]]:
        """The latest record of each key given (all keys when None), in the order given."""
        latest = self.latest()
        if keys is None:
            return list(latest.values())
        return [latest[k] for k in keys if k in latest]

    def export(self, path: str | Path, keys: Iterable[tuple] | None = None) -> int:
        """The latest records as a JSON array file (what the report reads)."""
        rows = self.select(keys)
        tmp = Path(f"{path}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(rows, indent=1, default=str))
        os.replace(tmp, path)
        return len(rows)


__all__ = ["KEY_FIELDS", "RESULTS_FILE", "RecordStore", "key_str", "record_key"]
