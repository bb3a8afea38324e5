"""Keeping the candidate's processes in a box the checker controls (Linux; stdlib only).

- A uid of its own per sandbox when the evaluator runs as root and no GPU needs CUDA IPC
  (`UID_BASE + slot`, a slot held under an flock for the checker's life, so concurrent evaluations never
  share one; no /etc/passwd entry). Its processes are capped by `RLIMIT_NPROC`, and after the evaluation a
  helper that has become that uid calls `kill(-1, SIGKILL)` until no process of the uid is left: nothing
  the candidate starts can outrun it, however it forks or detaches. Files are capped by `RLIMIT_FSIZE`.
  Where the interpreter, torch or the build root cannot be read by others (a pyenv under /root), the uid
  keeps one capability, CAP_DAC_READ_SEARCH (read any file, as the root-without-capabilities sandbox could
  before), and the verdict says so.
- `cgroup.kill` on a cgroup of its own where cgroup v2 is writable (root): atomic, and a second net.
- Child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`) on the checker, for every host (it needs no
  privileges; a GPU host runs the sandbox as the evaluator's own user): a process the candidate starts that
  double-forks or calls `setsid` is re-parented to the checker, which stops every descendant (SIGSTOP:
  a stopped process cannot fork) before it kills them, and repeats until none is left.
- Not dumpable (`PR_SET_DUMPABLE 0`) on the checker: another process of the same user cannot attach to it,
  read or write its memory, or open its file descriptors through /proc.
- Landlock: the sandbox writes only below its scratch folder, which holds its private build folder (not
  /dev/shm, /tmp or /var/tmp); a watchdog (`Quota`) kills it when what it wrote there grows past the
  scratch quota.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
_EVALUATION = Path(__file__).resolve().parents[1]  # htam_agent/evaluation/, this file is in common/


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


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def _all_pids() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []


def children(pid: int | None = None) -> list[int]:
    """Direct children of `pid` (default: this process) that are still running (zombies left out)."""
    pid = os.getpid() if pid is None else pid
    kids = []
    for p in _all_pids():
        st = _stat(p)
        if st and st[1] == pid and st[0] not in "ZX":
            kids.append(p)
    return kids


def descendants(pid: int | None = None, keep: set[int] | frozenset[int] = frozenset()) -> dict[int, str]:
    """Every living descendant of `pid` (default: this process) except `keep` and theirs: {pid: state}.

    One scan of /proc's parent links (the `children` files can miss a child whose parent is a thread)."""
    root = os.getpid() if pid is None else pid
    by_parent: dict[int, list[tuple[int, str]]] = {}
    for p in _all_pids():
        st = _stat(p)
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


# --------------------------------------------------------------------------------------------------------
# Who the sandbox runs as

UID_BASE = 2_000_000  # sandbox uids: UID_BASE + slot (no passwd entry needed)
GID = 2_000_000       # one group for every slot: the sandboxes' build folder is shared through it
SLOTS = 1000
CAP_DAC_READ_SEARCH = 2
_SLOT_DIR = Path("/tmp/htam-sandbox-slots")  # fixed: every evaluator on the host must see the same locks


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, "") or default)
    except ValueError:
        return default


def nproc_limit() -> int:
    """RLIMIT_NPROC of a sandbox uid: processes and threads (OpenMP pools, compiler jobs) it may have."""
    return _env_int("HTAM_SANDBOX_NPROC", 256 + 8 * (os.cpu_count() or 1))


def file_limit() -> int:
    """RLIMIT_FSIZE of every sandbox process: the largest file it may write (a precompiled header of
    torch/extension.h is ~300 MB)."""
    return _env_int("HTAM_SANDBOX_FILE_MB", 1024) << 20


def quota() -> int:
    """What a sandbox may add to its scratch and build folders in all, before its evaluation ends."""
    return _env_int("HTAM_SANDBOX_QUOTA_MB", 2048) << 20


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
    return [sys.executable, "-S", "-I", str(Path(__file__).resolve()), "--launch", str(ident.uid), str(ident.gid),
            str(int(ident.read_all)), str(nproc_limit()), str(file_limit()), "--", *argv]


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


def processes_of(uid: int) -> list[int]:
    """Living (not zombie) processes whose real uid is `uid`."""
    found = []
    for p in _all_pids():
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
        while _stat(pid) is not None:
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
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return any(Path("/dev").glob("nvidia[0-9]*"))


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


def chown_tree(path: Path, uid: int, gid: int) -> None:
    os.chown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            try:
                os.chown(os.path.join(root, n), uid, gid, follow_symlinks=False)
            except OSError:
                pass


# --------------------------------------------------------------------------------------------------------
# A cgroup of its own (cgroup v2, root): cgroup.kill ends every process in it at once


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


# --------------------------------------------------------------------------------------------------------
# The scratch quota


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


if __name__ == "__main__" and sys.argv[1:2] == ["--launch"]:
    _launch(sys.argv[2:])
