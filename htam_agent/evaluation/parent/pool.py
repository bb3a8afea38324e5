"""The parent's pool of checker processes: each started ahead of its job (torch imported, its sandbox starting),
forked from the launcher where it serves (launcher_client.py), else a fresh interpreter; and the environment every
evaluation process gets."""

from __future__ import annotations

import atexit
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from ..common.malloc import MALLOC_MMAP_THRESHOLD, MALLOC_TRIM_THRESHOLD
from . import launcher_client

_PKG_PARENT = str(Path(__file__).resolve().parents[3])
_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION)", re.I)




def scrubbed_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The parent's environment minus anything that looks like a secret (API keys never reach candidates)."""
    env = {k: v for k, v in os.environ.items() if not _SECRET.search(k)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PKG_PARENT, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    # Two OpenMP runtimes meet in a CPU candidate's forward (torch's own and the one its extension links);
    # with the default policy each keeps its threads spinning after a parallel region, and on a small
    # machine they steal each other's cores (the eager baseline's mean was 14x its median on 2 cores).
    # Passive waiting for every evaluation process, candidate and baselines alike: one protocol.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # glibc's malloc moves its mmap and trim thresholds with the allocation history, so a process either
    # keeps the MBs of a forward's temporaries on its heap or gives them back to the kernel and page-faults
    # them in again on every call. Measured on norm_rmsnorm's eager forward (8 MB temporaries, 2-core VM):
    # 1.5, 5.1, 4.8, 4.4, 4.3 ms in five evaluations, each steady on its own; with fixed thresholds 1.0-1.4 ms
    # in all five. Fixed values, the same for every evaluation process: one steady state for all.
    env.setdefault("MALLOC_MMAP_THRESHOLD_", str(MALLOC_MMAP_THRESHOLD))
    env.setdefault("MALLOC_TRIM_THRESHOLD_", str(MALLOC_TRIM_THRESHOLD))
    env.update(extra or {})
    return env



class Spare:
    """A checker process started ahead of time (torch imported, its sandbox starting), waiting for a job.

    Still one checker and one sandbox per candidate; starting the next pair while the current one runs
    takes Python and torch start-up (seconds) off every candidate's time-to-verdict. The verdict comes back
    on a pipe only the checker holds (the sandbox is started without it), never through a file.
    """

    def __init__(self) -> None:
        self.scratch = Path(tempfile.mkdtemp(prefix="htam-job-"))
        self.out = open(self.scratch / "stdout.txt", "wb")
        self.err = open(self.scratch / "stderr.txt", "wb")
        self.events, w = os.pipe()
        env = scrubbed_env()
        try:  # forked from the launcher where it serves (no torch import per checker), else a fresh interpreter
            launched = launcher_client.spawn(self.scratch, env, self.out, self.err, w)
            self.proc: subprocess.Popen | launcher_client.Launched = launched or subprocess.Popen(
                [sys.executable, "-m", "htam_agent.evaluation.checker", "--result-fd", str(w)],
                cwd=self.scratch, env=env, stdout=self.out, stderr=self.err, stdin=subprocess.PIPE,
                pass_fds=(w,), start_new_session=True,  # its own process group: a timeout kills it whole
            )
        finally:
            os.close(w)
        os.set_blocking(self.events, False)


_spare_lock = threading.Lock()
_spares: list[Spare] = []
SPARES = 2  # enough to hide start-up (~3-4 s on a GPU host) behind jobs of ~2-3 s


class LaterSpare:
    """A CPU job's next checker, started once this job's checker has given its verdict (`finish`): started
    earlier, its imports competed with this job's timing and its processes sat beside this job's peak memory."""

    def __init__(self, armed: bool) -> None:
        self.armed = armed

    def finish(self) -> None:
        if self.armed:
            self.armed = False
            _replenish(1)


def start_early() -> None:
    """Start the launcher now, for a command that is about to evaluate: its torch import runs beside the
    caller's own work before the first job (reading the task, deriving its sizes and footprint: the parent's
    torch import), instead of after it, so that a one-shot `eval` pays one torch import on its critical path,
    not two in a row. Nothing waits for it: an `eval` answered from the store leaves at once (the launcher,
    which has forked nothing, is killed at exit). Where the launcher does not serve, nothing starts early."""
    launcher_client.start(scrubbed_env())


def take_spare(prestart: bool) -> Spare:
    with _spare_lock:
        while _spares and _spares[0].proc.poll() is not None:
            _discard(_spares.pop(0))
        spare = _spares.pop(0) if _spares else Spare()
    if prestart:
        _replenish()
    return spare


def _replenish(n: int = SPARES) -> None:
    with _spare_lock:
        while len(_spares) < n:
            _spares.append(Spare())


def _discard(spare: Spare) -> None:
    for f in (spare.out, spare.err):
        f.close()
    try:
        os.close(spare.events)
    except OSError:
        pass
    rmtree(spare.scratch)


@atexit.register
def _shutdown_spares() -> None:
    """The spares no job came for: told there is none (their stdin closes: each kills its sandbox and
    goes), then their folders go. Before this, every `htam eval` left one `htam-job-*` folder behind."""
    with _spare_lock:
        spares = list(_spares)
        _spares.clear()
    for spare in spares:
        try:
            if spare.proc.stdin is not None:
                spare.proc.stdin.close()
        except OSError:
            pass
    for spare in spares:
        try:
            spare.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_group(spare.proc)
            spare.proc.wait()
        _discard(spare)


def kill_group(proc: subprocess.Popen | launcher_client.Launched) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
