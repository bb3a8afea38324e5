"""A cgroup of its own for the sandbox (cgroup v2, root, Linux; stdlib only): `cgroup.kill` ends every process
in it at once, a second net beside the sandbox's uid and the checker's subreaper; `cgroup.freeze` stops them
all at once (paired timing freezes the side not being timed)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


class Cgroup:
    """A child of this process's cgroup v2 group; None from `create` where that tree is not writable."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, name: str) -> Cgroup | None:
        if os.geteuid() != 0 or not sys.platform.startswith("linux"):
            return None
        try:
            mount = next(line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()
                         if line.split()[2:3] == ["cgroup2"])
            own = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines()
                       if line.startswith("0::"))
            path = Path(mount) / own.lstrip("/") / name
            path.mkdir()
        except (OSError, StopIteration, IndexError):
            return None
        if not (path / "cgroup.kill").exists():  # kernels before 5.14: the uid kill does the work
            path.rmdir()
            return None
        return cls(path)

    def add(self, pid: int) -> bool:
        try:
            (self.path / "cgroup.procs").write_text(str(pid))
            return True
        except OSError:
            return False

    def freeze(self, frozen: bool, deadline_s: float = 2.0) -> bool:
        """cgroup.freeze: every process of the group stops (or runs again) at once, new children included;
        True once the kernel reports the group's state as asked."""
        try:
            (self.path / "cgroup.freeze").write_text("1" if frozen else "0")
        except OSError:
            return False
        want = f"frozen {int(frozen)}"
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            try:
                if want in (self.path / "cgroup.events").read_text():
                    return True
            except OSError:
                return False
            time.sleep(0.0002)
        return False

    def kill(self, deadline_s: float = 5.0) -> bool:
        """cgroup.kill, then wait until the group is empty and remove it; False if it is not empty."""
        try:
            (self.path / "cgroup.kill").write_text("1")
        except OSError:
            return False
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            try:
                if "populated 0" in (self.path / "cgroup.events").read_text():
                    break
            except OSError:
                break
            time.sleep(0.001)
        try:
            self.path.rmdir()
            return True
        except OSError:
            return False
