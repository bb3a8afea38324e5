"""The scratch quota (stdlib only): a watchdog (`Quota`) sums what the sandbox adds to its scratch and build
folders and kills it when that grows past `quota()` (HTAM_SANDBOX_QUOTA_MB) or too many files."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable

from .sandbox_uid import env_int


def quota() -> int:
    """What a sandbox may add to its scratch and build folders in all, before its evaluation ends."""
    return env_int("HTAM_SANDBOX_QUOTA_MB", 2048) << 20


def disk_usage(path: str, max_entries: int = 200_000) -> tuple[int, int]:
    """(bytes on disk, entries) below `path`, not following links; stops counting at `max_entries`."""
    total = entries = 0
    todo = [path]
    while todo and entries < max_entries:
        try:
            with os.scandir(todo.pop()) as it:
                for e in it:
                    entries += 1
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += st.st_blocks * 512
                    if stat.S_ISDIR(st.st_mode):
                        todo.append(e.path)
        except OSError:
            pass
    return total, entries


class Quota:
    """A watchdog thread: what the sandbox adds to its folders, summed every `interval_s`; over `limit`
    bytes (or `max_entries` new files), `on_over(reason)` is called once (it kills the sandbox)."""

    def __init__(self, limit: int, on_over: Callable[[str], None], interval_s: float = 0.5,
                 max_entries: int = 100_000, start: bool = True) -> None:
        """`start=False`: the thread starts at `start()` (a checker that forks sandboxes forks them first)."""
        self.limit, self.on_over, self.interval_s, self.max_entries = limit, on_over, interval_s, max_entries
        self.paths: dict[str, tuple[int, int]] = {}
        self.over: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="htam-quota", daemon=True)
        if start:
            self.start()

    def start(self) -> None:
        if not self._thread.is_alive() and not self._stop.is_set():
            self._thread.start()

    def watch(self, path: str) -> None:
        if path not in self.paths:
            self.paths[path] = disk_usage(path)

    def check(self) -> str | None:
        used = entries = 0
        for path, (base, base_entries) in list(self.paths.items()):
            b, n = disk_usage(path, base_entries + self.max_entries + 1)
            used, entries = used + max(0, b - base), entries + max(0, n - base_entries)
        if used > self.limit:
            return (f"over its scratch quota: it wrote {used >> 20} MB to its scratch and build folders "
                    f"(limit {self.limit >> 20} MB, HTAM_SANDBOX_QUOTA_MB)")
        if entries > self.max_entries:
            return f"over its scratch quota: it made more than {self.max_entries} files"
        return None

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            reason = self.check()
            if reason is not None:
                self.over = reason
                self.on_over(reason)
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
