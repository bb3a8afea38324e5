"""The checker's hold on every process under it (Linux; stdlib only): a child subreaper
(`prctl(PR_SET_CHILD_SUBREAPER)`, for every host: it needs no privileges), so that a process the candidate starts
that double-forks or calls `setsid` is re-parented to the checker, which stops every descendant (SIGSTOP: a
stopped process cannot fork) before it kills them, and repeats until none is left (`kill_tree`); not dumpable
(`PR_SET_DUMPABLE 0`), so that another process of the same user cannot attach to the checker, read or write its
memory, or open its file descriptors through /proc; forks that never return into the caller's code."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    return sys.platform.startswith("linux") and _prctl(PR_SET_CHILD_SUBREAPER, 1)


def fork_child(child: Callable[[], None]) -> int:
    """Fork; the child runs `child()` and leaves with its exit code (a traceback on stderr if it raised),
    never returning into the caller's code. Returns the child's pid to the parent."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            child()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    return pid


def make_undumpable() -> bool:
    return sys.platform.startswith("linux") and _prctl(PR_SET_DUMPABLE, 0)


def set_name(name: str) -> bool:
    """The process's name in `ps -o comm`, `top` (a fork keeps its parent's: the launcher's)."""
    return sys.platform.startswith("linux") and _prctl_bytes(15, name.encode()[:15])  # PR_SET_NAME


def _prctl_bytes(option: int, value: bytes) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_char_p(value), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def make_dumpable() -> bool:
    """What an exec leaves a process of one uid: its own /proc entries its own (a forked sandbox)."""
    return sys.platform.startswith("linux") and _prctl(PR_SET_DUMPABLE, 1)


def pid_stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def all_pids() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []


def children(pid: int | None = None) -> list[int]:
    """Direct children of `pid` (default: this process) that are still running (zombies left out)."""
    pid = os.getpid() if pid is None else pid
    kids = []
    for p in all_pids():
        st = pid_stat(p)
        if st and st[1] == pid and st[0] not in "ZX":
            kids.append(p)
    return kids


def descendants(pid: int | None = None, keep: set[int] | frozenset[int] = frozenset()) -> dict[int, str]:
    """Every living descendant of `pid` (default: this process) except `keep` and theirs: {pid: state}.

    One scan of /proc's parent links (the `children` files can miss a child whose parent is a thread)."""
    root = os.getpid() if pid is None else pid
    by_parent: dict[int, list[tuple[int, str]]] = {}
    for p in all_pids():
        st = pid_stat(p)
        if st:
            by_parent.setdefault(st[1], []).append((p, st[0]))
    found, todo = {}, [root]
    while todo:
        for kid, state in by_parent.get(todo.pop(), []):
            if kid not in keep and kid not in found and kid != root:
                found[kid] = state
                todo.append(kid)
    return {p: s for p, s in found.items() if s not in "ZX"}


def kill_tree(root_pid: int | None, keep: set[int] | None = None, deadline_s: float = 20.0) -> int:
    """Kill `root_pid` and every descendant of this process (a subreaper: orphans come to us) but `keep`.

    Stop first, kill second: SIGSTOP every descendant, scan again until a scan finds none that is not
    stopped (a stopped process cannot fork, so a chain of `setsid` links or a fork loop cannot grow while
    we look), then SIGKILL them all, and repeat until none is left. Returns how many were killed; what is
    still alive after `deadline_s` is left to `leftovers` to report."""
    keep = set(keep or ())
    if root_pid:
        _signal(root_pid, signal.SIGSTOP)  # killed with the rest, once nothing under it runs
    killed: set[int] = set()
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        _reap()
        tree = descendants(keep=keep)
        if not tree:
            break
        running = list(tree)
        while running and time.monotonic() < end:
            for p in running:  # again for any a sibling woke up (SIGCONT) before it was stopped itself
                _signal(p, signal.SIGSTOP)
            tree = descendants(keep=keep)
            running = [p for p, state in tree.items() if state not in "tT"]
            if running:
                time.sleep(0.0005)
        for p in tree:
            if _signal(p, signal.SIGKILL):
                killed.add(p)
        time.sleep(0.001)
    _reap()
    return len(killed)


def signal_all(pids: list[int], sig: int) -> int:
    """Send `sig` to each of `pids`; how many received it."""
    return sum(_signal(p, sig) for p in pids)


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
