"""Landlock: what the sandbox may write, whoever it runs as (Linux; stdlib only): only below its scratch folder,
which holds its private build folder (not /dev/shm, /tmp or /var/tmp), and it may not signal or trace processes
outside its domain (ABI 6+)."""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

from .sandbox_uid import gpu_visible

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on x86_64 and aarch64
_PR_SET_NO_NEW_PRIVS = 38
_WRITE_FILE, _TRUNCATE = 1 << 1, 1 << 14
_DIR_WRITES = sum(1 << b for b in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))  # write, remove, make any kind of node
_REFER = 1 << 13
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")


def landlock_abi() -> int:
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return max(0, int(libc.syscall(_SYS_CREATE_RULESET, None, 0, 1)))
    except (OSError, AttributeError):
        return 0


def restrict_writes(writable_dirs: list[str]) -> str:
    """Landlock this process (and all it starts): it may read and execute anything, but write only below
    `writable_dirs` and a few device files (the GPU's among them); it may not signal or trace processes
    outside its domain (ABI 6+). /dev/shm, /tmp and /var/tmp are closed: a file left there would outlive
    the evaluation (a tmpfs sized to all of RAM); CPU outputs come back through memfd, which needs no
    folder. Where a GPU is visible /dev/shm stays writable: torch's CUDA IPC keeps its reference counter
    there (without it, measured on the H200: "unable to open shared memory object").
    Irreversible. Returns a one-line description, or why not."""
    abi = landlock_abi()
    if abi < 1:
        return "landlock unavailable (kernel without it): the candidate may write wherever its user may"
    libc = ctypes.CDLL(None, use_errno=True)
    handled = _DIR_WRITES | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    scoped = (_SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL) if abi >= 6 else 0

    class RulesetAttr(ctypes.Structure):
        _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                    ("scoped", ctypes.c_uint64)]

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    attr = RulesetAttr(handled, 0, scoped)
    size = ctypes.sizeof(RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        return f"landlock ruleset failed: {os.strerror(ctypes.get_errno())}"
    try:
        file_rights = _WRITE_FILE | (_TRUNCATE if abi >= 3 else 0)
        dirs = [*writable_dirs, *(["/dev/shm"] if gpu_visible() else [])]
        files = [*_DEVICE_FILES, *(str(p) for p in Path("/dev").glob("nvidia*")),
                 *(str(p) for p in Path("/dev/dri").glob("*") if Path("/dev/dri").is_dir())]
        for path, rights in [(d, handled) for d in dirs] + [(f, file_rights) for f in files]:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not os.path.isdir(path):
                    rights &= file_rights
                rule = PathBeneath(rights, fd)
                if libc.syscall(_SYS_ADD_RULE, ruleset, 1, ctypes.byref(rule), 0) < 0:
                    return f"landlock rule for {path} failed: {os.strerror(ctypes.get_errno())}"
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"no_new_privs failed: {os.strerror(ctypes.get_errno())}"
        if libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) < 0:
            return f"landlock restrict failed: {os.strerror(ctypes.get_errno())}"
    finally:
        os.close(ruleset)
    return (f"landlock ABI {abi}: writes only below {', '.join(dirs)}"
            + ("; no signals or abstract sockets outside the sandbox" if scoped else ""))
