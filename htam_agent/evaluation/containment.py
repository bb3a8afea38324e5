"""Keeping the candidate's processes in a box the checker controls (Linux; stdlib only).

- Child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`) on the checker: a process the candidate starts that
  double-forks, calls `setsid` or leaves its process group is re-parented to the checker, not to init, so
  the checker finds and kills every one of them when the sandbox ends. It needs no privileges, so it works
  as root on the CPU machines and as any user on a GPU host; a PID namespace would need root or user
  namespaces and a cgroup a writable cgroup tree, neither of which every host grants.
- Not dumpable (`PR_SET_DUMPABLE 0`) on the checker: another process of the same user cannot attach to it,
  read or write its memory, or open its file descriptors through /proc.
- An unprivileged user for the sandbox when the evaluator runs as root (`HTAM_SANDBOX_USER`, default
  `nobody`): root candidates could otherwise rewrite the evaluator's own files, signal the checker, or
  read its memory. Used only when that user can read the interpreter and the package; otherwise the verdict
  says the candidate ran with the evaluator's privileges.
"""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import sys
import time
from pathlib import Path

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
_PKG_PARENT = Path(__file__).resolve().parents[2]


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    return sys.platform.startswith("linux") and _prctl(PR_SET_CHILD_SUBREAPER, 1)


def make_undumpable() -> bool:
    return sys.platform.startswith("linux") and _prctl(PR_SET_DUMPABLE, 0)


def children(pid: int | None = None) -> list[int]:
    """Direct children of `pid` (default: this process), from /proc."""
    pid = os.getpid() if pid is None else pid
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    kids += [int(x) for x in f.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    if kids:
        return sorted(set(kids))
    # Kernels without the children file: scan every process's parent.
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    kids.append(int(name))
            except (OSError, IndexError, ValueError):
                pass
    return kids


def kill_tree(root_pid: int | None, keep: set[int] | None = None, rounds: int = 50) -> int:
    """SIGKILL `root_pid`, then every process re-parented to this subreaper, until none is left.

    Killing a process re-parents its own children to us, so this repeats until a round finds nothing
    (bounded: a fork bomb cannot keep it busy forever). Returns how many processes were killed.
    """
    keep = keep or set()
    killed = 0
    if root_pid:
        try:
            os.killpg(root_pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            os.kill(root_pid, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            pass
    for _ in range(rounds):
        _reap()
        kids = [k for k in children() if k not in keep]
        if not kids:
            break
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
    _reap()
    return killed


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


# --------------------------------------------------------------------------------------------------------
# Who the sandbox runs as


def _readable_by_others(path: Path) -> bool:
    """Can a user other than the owner (and outside its group) reach `path` and read it?"""
    try:
        for parent in [*reversed(path.parents)]:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
        mode = os.stat(path).st_mode
        return bool(mode & stat.S_IROTH) and (not stat.S_ISDIR(mode) or bool(mode & stat.S_IXOTH))
    except OSError:
        return False


def sandbox_user() -> tuple[int, int] | None | str:
    """(uid, gid) to run the sandbox as; None to run as ourselves; or a string saying why we cannot drop.

    Only root drops privileges, and only where no GPU is visible: CUDA IPC, which hands tensors between
    the checker and the sandbox, does not work across users (measured on the H200 host: "mapping of buffer
    object failed"). There the sandbox keeps the user but loses every capability (`drop_capabilities`) and
    is confined by Landlock. `HTAM_SANDBOX_USER=` (empty) keeps the evaluator's own user on purpose.
    """
    if os.geteuid() != 0:
        return None
    if _gpu_visible():
        return "a GPU is visible and CUDA IPC does not cross users; capabilities dropped instead"
    name = os.environ.get("HTAM_SANDBOX_USER", "nobody")
    if not name:
        return "HTAM_SANDBOX_USER is empty"
    try:
        import pwd

        entry = pwd.getpwnam(name)
    except (KeyError, ImportError):
        return f"no user {name!r} on this host (set HTAM_SANDBOX_USER to an unprivileged user)"
    if entry.pw_uid == 0:
        return f"HTAM_SANDBOX_USER={name} is root"
    needed = [Path(sys.executable).resolve(), _PKG_PARENT / "htam_agent" / "evaluation" / "sandbox.py"]
    import torch  # noqa: F401  (already imported by the checker)

    needed.append(Path(sys.modules["torch"].__file__).resolve())
    for p in needed:
        if not _readable_by_others(p):
            return f"{name!r} cannot read {p}"
    return entry.pw_uid, entry.pw_gid


def _gpu_visible() -> bool:
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return any(Path("/dev").glob("nvidia[0-9]*"))


_CAPSET = {"x86_64": 126, "aarch64": 91}
_PR_CAPBSET_DROP = 24


def drop_capabilities() -> str:
    """Give up every capability (root stays uid 0 but is an ordinary user to the kernel's checks: no
    CAP_SYS_PTRACE, CAP_KILL, CAP_DAC_OVERRIDE, CAP_SYS_ADMIN...). Irreversible; a no-op for non-root."""
    if os.geteuid() != 0:
        return "not root: no capabilities to drop"
    import platform

    nr = _CAPSET.get(platform.machine())
    if nr is None:
        return f"capabilities kept (unknown syscall number on {platform.machine()})"
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):  # the bounding set first (needs CAP_SETPCAP, which we still hold)
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    if libc.syscall(nr, ctypes.byref(header), data) != 0:
        return f"capabilities kept: capset failed ({os.strerror(ctypes.get_errno())})"
    return "all capabilities dropped"


def chown_tree(path: Path, uid: int, gid: int) -> None:
    os.chown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            try:
                os.chown(os.path.join(root, n), uid, gid, follow_symlinks=False)
            except OSError:
                pass


# --------------------------------------------------------------------------------------------------------
# Landlock: what the sandbox may write, whoever it runs as


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
    `writable_dirs`, /dev/shm and a few device files (the GPU's among them); it may not signal or trace
    processes outside its domain (ABI 6+). Irreversible. Returns a one-line description, or why not."""
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
        dirs = [*writable_dirs, "/dev/shm"]
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
