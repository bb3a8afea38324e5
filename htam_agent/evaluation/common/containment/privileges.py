"""Giving up privileges for good (Linux; stdlib only): every capability dropped (`drop_capabilities`, where
the sandbox keeps the evaluator's user: a GPU host), or root turned into the sandbox's uid with its limits set
(`become`). This file is also the launcher script a sandbox uid starts through (`sandbox_uid.launch_command`:
`python -S -I privileges.py --launch ...`), so it imports nothing but the standard library, not even its
neighbours."""

from __future__ import annotations

import ctypes
import os
import sys

CAP_DAC_READ_SEARCH = 2
_CAPSET = {"x86_64": 126, "aarch64": 91}
_PR_CAPBSET_DROP, _PR_SET_KEEPCAPS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE = 24, 8, 47, 2


def _capset(effective: int, permitted: int, inheritable: int) -> int:
    """capset(2) on this thread (caps below 32 only); 0 on success, -1 (errno set) or -2 (unknown arch)."""
    nr = _CAPSET.get(os.uname().machine)  # (no import: the launcher calls this after its setuid)
    if nr is None:
        return -2
    libc = ctypes.CDLL(None, use_errno=True)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    data = (Data * 2)()
    data[0].effective, data[0].permitted, data[0].inheritable = effective, permitted, inheritable
    return int(libc.syscall(nr, ctypes.byref(Header(0x20080522, 0)), data))


def _effective_caps() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0


def drop_capabilities() -> str:
    """Give up every capability (root stays uid 0 but is an ordinary user to the kernel's checks: no
    CAP_SYS_PTRACE, CAP_KILL, CAP_DAC_OVERRIDE, CAP_SYS_ADMIN...). Irreversible; a no-op for non-root,
    which says what it holds (a sandbox uid may keep CAP_DAC_READ_SEARCH)."""
    if os.geteuid() != 0:
        caps = _effective_caps()
        if caps == 1 << CAP_DAC_READ_SEARCH:
            return "not root: CAP_DAC_READ_SEARCH only"
        return "not root: no capabilities" if caps == 0 else f"not root: capabilities {caps:#x}"
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):  # the bounding set first (needs CAP_SETPCAP, which we still hold)
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    rc = _capset(0, 0, 0)
    if rc == -2:
        return f"capabilities kept (unknown syscall number on {os.uname().machine})"
    if rc != 0:
        return f"capabilities kept: capset failed ({os.strerror(ctypes.get_errno())})"
    return "all capabilities dropped"


def _launch(args: list[str]) -> None:
    uid, gid, read_all, nproc, fsize = (int(a) for a in args[:5])
    become(uid, gid, bool(read_all), nproc, fsize)
    os.execv(args[6], args[6:])


def become(uid: int, gid: int, read_all: bool, nproc: int, fsize: int) -> None:
    """Turn this (root) process into the sandbox's uid for good: every capability gone (CAP_DAC_READ_SEARCH
    kept with `read_all`, ambient too, so what it execs keeps it), its limits set. Both ways a sandbox starts
    go through here: the launcher script before it execs, and a fork of a pre-imported checker."""
    import resource

    keep = (1 << CAP_DAC_READ_SEARCH) if read_all else 0
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):  # the bounding set, while we still hold CAP_SETPCAP
        if not keep >> cap & 1:
            libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    if libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_KEEPCAPS")
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise SystemExit("htam launcher: could not become the sandbox uid")
    if _capset(keep, keep, keep) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    if keep and libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, CAP_DAC_READ_SEARCH, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_CAP_AMBIENT_RAISE")
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.umask(0o002)  # builds are shared with the other slots through the group


if __name__ == "__main__" and sys.argv[1:2] == ["--launch"]:
    _launch(sys.argv[2:])
