"""The parent's handle on the launcher (launcher/): checkers forked from one pre-imported process.

One launcher per evaluating process, started when the first checker is needed; it pays the torch import
once, and each checker (and its sandbox) is then a fork of it. `spawn` returns a handle with the part of
`subprocess.Popen` the pool uses (pid, stdin, poll, wait, returncode). The checker is the launcher's child,
not ours: its exit status comes back on a pipe the launcher writes when it reaps it.

`spawn` returns None where the launcher cannot serve (not Linux, `HTAM_LAUNCHER=0`, it failed to start or
died twice, or it found CUDA initialised in itself); the caller then starts the checker as a fresh interpreter,
as before. Where a GPU is visible it serves as on the CPU: forking from a process that imported torch but never
initialised the CUDA driver is safe, the launcher checks that before every fork (common/gpu.py) and refuses
otherwise, and each checker and sandbox initialises CUDA only once its job has arrived. Each checker gets the
environment of its request, but what is read once at a process's start (glibc's malloc settings, OpenMP's,
the interpreter's) is the launcher's: when any variable changes but those known to be read only later
(`HTAM_*`, which the evaluator reads when it needs them, and pytest's `PYTEST_CURRENT_TEST`), the next spawn
starts a new launcher.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from ..common import protocol

log = logging.getLogger(__name__)
STATUS = struct.Struct("!i")  # the launcher's record of a checker's exit status (launcher/__main__.py)
START_TIMEOUT_S = 180.0  # the launcher's first answer waits for its imports
#: variables a checker may see changed from its launcher's start: read by the evaluator only when needed
#: (no module of the evaluator reads the environment at import), or never read by it at all
LATE = re.compile(r"HTAM_\w*|PYTEST_CURRENT_TEST")


def startup_env(env: dict[str, str]) -> dict[str, str]:
    """The part of an environment a launcher must have been started with to serve it."""
    return {k: v for k, v in env.items() if not LATE.fullmatch(k)}


class CudaInitialised(RuntimeError):
    """The launcher found the CUDA driver initialised in itself: a fork of it could not use CUDA."""


class Launched:
    """A checker the launcher forked, seen from the parent."""

    def __init__(self, pid: int, stdin: IO[bytes], status_fd: int) -> None:
        self.pid, self.stdin, self.returncode = pid, stdin, None
        self._status: int | None = status_fd

    def _settle(self, timeout: float) -> None:
        if self.returncode is not None:
            return
        if self._status is None:  # the launcher died before it reaped this checker: alive or not is all we know
            if not _alive(self.pid):
                self.returncode = -1
            return
        ready, _, _ = select.select([self._status], [], [], timeout)
        if not ready:
            return
        data = os.read(self._status, STATUS.size)
        os.close(self._status)
        self._status = None
        if len(data) == STATUS.size:
            self.returncode = STATUS.unpack(data)[0]
        elif not _alive(self.pid):
            self.returncode = -1

    def poll(self) -> int | None:
        self._settle(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = 1.0 if end is None else end - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(f"checker {self.pid}", timeout or 0.0)
            self._settle(min(left, 1.0) if self._status is not None else min(left, 0.01))
        return self.returncode

    def __del__(self) -> None:
        if self._status is not None:
            try:
                os.close(self._status)
            except OSError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class Launcher:
    """One running launcher process and its control socket."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env, self.owner = dict(env), os.getpid()
        self.folder = Path(tempfile.mkdtemp(prefix="htam-launcher-"))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = ours
        with open(self.folder / "stderr.txt", "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "htam_agent.evaluation.launcher", "--control-fd", str(theirs.fileno())],
                cwd=self.folder, env=self.env, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                pass_fds=(theirs.fileno(),), start_new_session=True)
        theirs.close()
        self.answered = self.asked = False

    def spawn(self, cwd: Path, env: dict[str, str], out: IO[bytes], err: IO[bytes], result_fd: int) -> Launched:
        stdin_r, stdin_w = os.pipe()
        status_r, status_w = os.pipe()
        self.asked = True
        try:
            protocol.send(self.sock, {"op": "fork", "cwd": str(cwd), "env": env},
                          [result_fd, stdin_r, out.fileno(), err.fileno(), status_w])
            self.sock.settimeout(START_TIMEOUT_S if not self.answered else 30.0)
            reply = protocol.recv(self.sock).body
        except BaseException:
            os.close(stdin_w)
            os.close(status_r)
            raise
        finally:
            os.close(stdin_r)
            os.close(status_w)
        if not isinstance(reply.get("pid"), int):
            os.close(stdin_w)
            os.close(status_r)
            if reply.get("cuda_initialised"):
                raise CudaInitialised(str(reply["cuda_initialised"])[:300])
            raise RuntimeError(f"the launcher refused to fork: {str(reply)[:200]}")
        self.answered = True
        return Launched(reply["pid"], os.fdopen(stdin_w, "wb"), status_r)

    def stderr_tail(self) -> str:
        try:
            return (self.folder / "stderr.txt").read_bytes()[-1500:].decode(errors="replace")
        except OSError:
            return ""

    def close(self) -> None:
        """Its control socket closed: it leaves (the checkers it forked carry on). One never asked for a checker
        has forked nothing and may still be importing: killed, not waited for."""
        if self.owner != os.getpid():  # inherited through a fork of the parent: the parent's, not ours to stop
            return
        try:
            self.sock.close()
        except OSError:
            pass
        if not self.answered and not self.asked:
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


_lock = threading.Lock()
_current: Launcher | None = None
_failures = 0
_cuda_refused: str | None = None  # why the launcher refused to fork (CUDA initialised in it): off for good


def enabled() -> bool:
    return (sys.platform.startswith("linux") and os.environ.get("HTAM_LAUNCHER", "1") != "0" and _failures < 2
            and _cuda_refused is None)


def start(env: dict[str, str]) -> None:
    """Start this process's launcher now (its imports take seconds) for checkers soon to be asked with `env`;
    returns at once. Nothing where it does not serve or one runs already."""
    global _current
    if not enabled():
        return
    with _lock:
        if _current is None or _current.owner != os.getpid():
            _current = Launcher(env)


def spawn(cwd: Path, env: dict[str, str], out: IO[bytes], err: IO[bytes], result_fd: int) -> Launched | None:
    """A checker forked by this process's launcher (started, or restarted for a changed start-up `env`);
    None when there is no launcher to ask (the caller starts a fresh interpreter)."""
    global _current, _failures, _cuda_refused
    if not enabled():
        return None
    with _lock:
        if _current is not None and (_current.owner != os.getpid() or startup_env(_current.env) != startup_env(env)
                                     or _current.proc.poll() is not None):
            if _current.owner == os.getpid():
                _current.close()
            _current = None
        if _current is None:
            _current = Launcher(env)
        try:
            return _current.spawn(cwd, env, out, err, result_fd)
        except CudaInitialised as exc:
            _cuda_refused = str(exc)
            log.warning("htam: the evaluator's launcher has CUDA initialised (%s), so a checker forked from it could "
                        "not use the GPU; checkers start as fresh interpreters from now on (each pays its torch "
                        "import). Its stderr: %s", exc, _current.stderr_tail()[-600:])
            _current.close()
            _current = None
            return None
        except (OSError, EOFError, TimeoutError, RuntimeError, protocol.ProtocolError) as exc:
            _failures += 1
            log.warning("htam: the evaluator's launcher could not fork a checker (%s); checkers start as fresh "
                        "interpreters%s. Its stderr: %s", exc, "" if enabled() else " from now on",
                        _current.stderr_tail()[-600:])
            _current.close()
            _current = None
            return None


@atexit.register
def shutdown() -> None:
    global _current
    with _lock:
        if _current is not None:
            _current.close()
            _current = None


__all__ = ["CudaInitialised", "Launched", "Launcher", "enabled", "shutdown", "spawn", "start"]
