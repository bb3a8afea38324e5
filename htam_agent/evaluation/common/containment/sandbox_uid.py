"""Who the sandbox runs as (Linux; stdlib only): a uid of its own per sandbox when the evaluator runs as root
and no GPU needs CUDA IPC (`UID_BASE + slot`, a slot held under an flock for the checker's life, so concurrent
evaluations never share one; no /etc/passwd entry). Its processes are capped by `RLIMIT_NPROC` and its files by
`RLIMIT_FSIZE` (set by `privileges.become`), and after the evaluation a helper that has become that uid calls
`kill(-1, SIGKILL)` until no process of the uid is left (`kill_uid`): nothing the candidate starts can outrun it,
however it forks or detaches. Where the interpreter, torch or the build root cannot be read by others (a pyenv
under /root), the uid keeps one capability, CAP_DAC_READ_SEARCH, and the verdict says so."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import stat
import sys
import time
from pathlib import Path

from .. import gpu
from .process_tree import all_pids, pid_stat

_EVALUATION = Path(__file__).resolve().parents[2]  # htam_agent/evaluation/; this file is in common/containment/

UID_BASE = 2_000_000  # sandbox uids: UID_BASE + slot (no passwd entry needed)
GID = 2_000_000       # one group for every slot: the sandboxes' build folder is shared through it
SLOTS = 1000
_SLOT_DIR = Path("/tmp/htam-sandbox-slots")  # fixed: every evaluator on the host must see the same locks


def env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, "") or default)
    except ValueError:
        return default


def nproc_limit() -> int:
    """RLIMIT_NPROC of a sandbox uid: processes and threads (OpenMP pools, compiler jobs) it may have."""
    return env_int("HTAM_SANDBOX_NPROC", 256 + 8 * (os.cpu_count() or 1))


def file_limit() -> int:
    """RLIMIT_FSIZE of every sandbox process: the largest file it may write (a precompiled header of
    torch/extension.h is ~300 MB)."""
    return env_int("HTAM_SANDBOX_FILE_MB", 1024) << 20


class Identity:
    """A sandbox's own uid, held (flock on its slot file) for as long as this process lives."""

    def __init__(self, slot: int, lock_fd: int, read_all: bool) -> None:
        self.slot, self.lock_fd, self.read_all = slot, lock_fd, read_all
        self.uid, self.gid = UID_BASE + slot, GID

    def describe(self) -> str:
        return (f"uid {self.uid} (its own, killed whole after the evaluation; at most {nproc_limit()} "
                f"processes and threads, files up to {file_limit() >> 20} MB)"
                + ("; reads every file (CAP_DAC_READ_SEARCH: the interpreter or torch is not readable by "
                   "others)" if self.read_all else ""))

    def release(self) -> None:
        if self.lock_fd >= 0:
            os.close(self.lock_fd)
            self.lock_fd = -1


def _slot_dir() -> Path | None:
    try:
        _SLOT_DIR.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(_SLOT_DIR)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o077:
        return None  # someone else's folder (or a link): we do not trust its locks
    return _SLOT_DIR


def _take_slot() -> tuple[int, int] | None:
    """The lowest free slot and its locked file descriptor (freed when this process ends, however)."""
    folder = _slot_dir()
    if folder is None:
        return None
    for slot in range(SLOTS):
        try:
            fd = os.open(folder / str(slot), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return slot, fd
        except OSError:
            os.close(fd)
    return None


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


def sandbox_user() -> Identity | None | str:
    """Who the sandbox runs as: an Identity (a uid of its own), None (ourselves, not root), or why not.

    Only root drops privileges, and only where no GPU is visible: CUDA IPC, which hands tensors between
    the checker and the sandbox, does not work across users (measured on the H200 host: "mapping of buffer
    object failed"). There the sandbox keeps the user but loses every capability (`drop_capabilities`) and
    is confined by Landlock. `HTAM_SANDBOX_USER=` (empty) keeps the evaluator's own user on purpose.
    A slot taken is swept first: a checker killed from outside may have left its uid's processes behind.
    """
    if os.geteuid() != 0:
        return None
    if gpu_visible():
        return "a GPU is visible and CUDA IPC does not cross users; capabilities dropped instead"
    if os.environ.get("HTAM_SANDBOX_USER", None) == "":
        return "HTAM_SANDBOX_USER is empty"
    taken = _take_slot()
    if taken is None:
        return f"no free sandbox uid slot in {_SLOT_DIR} (or the folder is not root's own)"
    import torch  # noqa: F401  (already imported by the checker)

    needed = [Path(sys.executable).resolve(), _EVALUATION / "sandbox" / "server.py",
              Path(sys.modules["torch"].__file__).resolve()]
    ident = Identity(*taken, read_all=not all(_readable_by_others(p) for p in needed))
    kill_uid(ident.uid)
    remove_owned(ident.uid)
    return ident


def launch_command(ident: Identity, argv: list[str]) -> list[str]:
    """`argv`, started as `ident`: a small launcher (this file, run as a script) that sets the limits,
    drops to the uid and execs `argv`; one interpreter start (~20 ms), while the checker waits for a job."""
    return [sys.executable, "-S", "-I", str(Path(__file__).resolve().with_name("privileges.py")), "--launch", str(ident.uid), str(ident.gid),
            str(int(ident.read_all)), str(nproc_limit()), str(file_limit()), "--", *argv]


def processes_of(uid: int) -> list[int]:
    """Living (not zombie) processes whose real uid is `uid`."""
    found = []
    for p in all_pids():
        try:
            with open(f"/proc/{p}/status") as f:
                text = f.read()
        except OSError:
            continue
        state = uid_line = ""
        for line in text.splitlines():
            if line.startswith("State:"):
                state = line.split()[1]
            elif line.startswith("Uid:"):
                uid_line = line
                break
        if uid_line and int(uid_line.split()[1]) == uid and state not in ("Z", "X"):
            found.append(p)
    return found


def kill_uid(uid: int, deadline_s: float = 10.0) -> list[int]:
    """SIGKILL every process of `uid`; returns those still alive after `deadline_s` (none, normally).

    A forked helper becomes `uid` and calls kill(-1, SIGKILL): the kernel signals every process of the
    uid in one pass that forks cannot race (RLIMIT_NPROC bounds them anyway), until a scan finds none."""
    if not processes_of(uid):
        return []
    pid = os.fork()
    if pid == 0:  # the helper: only system calls, then _exit
        code = 1
        try:
            os.setgroups([])
            os.setresgid(GID, GID, GID)
            os.setresuid(uid, uid, uid)
            end = time.monotonic() + deadline_s
            while time.monotonic() < end:
                try:
                    os.kill(-1, signal.SIGKILL)  # every process of the uid but this one
                except ProcessLookupError:
                    pass
                if processes_of(uid) == [os.getpid()]:
                    code = 0
                    break
                time.sleep(0.001)
        finally:
            os._exit(code)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # reaped by a concurrent `_reap`
        while pid_stat(pid) is not None:
            time.sleep(0.001)
    return processes_of(uid)


def remove_owned(uid: int, roots: tuple[str, ...] = ("/dev/shm", "/tmp", "/var/tmp", "/dev/mqueue")) -> int:
    """Remove what `uid` owns at the top of the world-writable folders (the only places outside its own
    folders it could write if Landlock were missing); returns how many entries went."""
    n = 0
    for root in roots:
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        for e in entries:
            try:
                if e.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    os.unlink(e.path)
                n += 1
            except OSError:
                pass
    return n


def gpu_visible() -> bool:
    return gpu.visible()


def chown_tree(path: Path, uid: int, gid: int) -> None:
    os.chown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            try:
                os.chown(os.path.join(root, n), uid, gid, follow_symlinks=False)
            except OSError:
                pass
