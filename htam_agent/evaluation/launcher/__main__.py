"""The launcher: `python -m htam_agent.evaluation.launcher --control-fd N` (started by parent/launcher_client.py,
never by hand).

Starting a checker and its sandbox as fresh interpreters imports torch twice per verdict (on the 2-core CI
machine about 1.3 s and 1.0 s of CPU, in a verdict of 3-4 s). This process imports torch and the checker's
modules once, then forks one checker per request. Each checker forks its sandboxes at once, before it reads
its job, so a sandbox starts from memory that holds no job and no secret; the fork becomes the sandbox's uid
exactly as the launcher script would (privileges.become) and runs the sandbox's module by name, as
`python -m` would (neither this process nor the checker imports the sandbox's code).

Where a GPU is visible it serves too: forking is safe from a process that imported torch (and Triton) but
never initialised the CUDA driver, and nothing here initialises it (common/gpu.py). Before every fork it
checks that (`gpu.fork_blocker()`); should anything have initialised CUDA, it refuses to fork and says why,
and the parent starts checkers as fresh interpreters from then on.

The launcher reads no job and runs no candidate. It is the parent of the checkers it forks: it reaps them and
writes each one's exit status on a pipe the parent handed over with the request. It leaves when the
parent's end of the control socket closes; checkers still running carry on (they are sessions of their own).
"""

from __future__ import annotations

import functools
import gc
import os
import select
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time

from ..common import gpu, protocol
from ..common.containment import process_tree

STATUS = struct.Struct("!i")


def _warm() -> None:
    """What every accepted candidate's checker would otherwise load at its roofline: FlopCounterMode's first
    use imports dynamo and inductor (about 2000 modules, ~1 s on the 2-core VM). Loaded once here, shared by
    every fork. It starts no thread and no process (the launcher must stay single-threaded to fork)."""
    import torch

    from ..checker import roofline

    roofline.count(lambda x: x + 1, [torch.zeros(2)])


def _child(request: dict, fds: list[int], control: socket.socket, wake: tuple[int, int]) -> None:
    """The forked checker: its own session, stdio and result pipe in place, nothing else of ours open."""
    started = time.perf_counter()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    events, stdin, out, err, status = fds
    control.close()
    for fd in (*wake, status):
        os.close(fd)
    os.setsid()
    process_tree.set_name("htam-checker")
    os.dup2(stdin, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.dup2(events, 3)
    os.closerange(4, 1 << 20)
    os.chdir(str(request["cwd"]))
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in dict(request["env"]).items()})
    tempfile.tempdir = None  # chosen again from this environment, not the one cached at the launcher's start
    sys.argv = [sys.argv[0]]
    gpu.set_role("checker")
    from ..checker import __main__ as checker_main  # imported by serve() already: a lookup

    checker_main.main(["--result-fd", "3"], forked=True, started=started)


def freeze_heap() -> None:
    """Every object the launcher holds now (torch, dynamo, inductor, the checker's modules) moved out of the
    garbage collector's reach (`gc.freeze`), once, before the first fork. A collection in a forked checker or
    sandbox writes into the header of every object it traverses, and each page it writes is copied out of the
    launcher's: 74 MiB of private memory in a fork after its first `gc.collect()` (PSS 111 -> 149 MiB), 1 MiB
    frozen, in each of the checker and its two sandboxes, which was most of what kept the bundled suite's 31 MB
    tasks at their 1.08 GiB budget (issue 36). Frozen objects are never collected: what the launcher made is
    kept as it is anyway, shared by every fork; what a fork makes afterwards is collected as usual."""
    gc.freeze()


def _reap(waiting: dict[int, int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = waiting.pop(pid, None)
        if fd is not None:
            try:
                os.write(fd, STATUS.pack(os.waitstatus_to_exitcode(status)))
            except OSError:  # the parent is gone
                pass
            os.close(fd)


def serve(control: socket.socket) -> None:
    process_tree.make_undumpable()  # no process of our user attaches to it or opens its descriptors via /proc
    gpu.set_role("launcher")
    gpu.install_tripwire()  # tests only (HTAM_TEST_CUDA_TRIPWIRE): before any of the evaluator's imports
    from ..checker import __main__ as checker_main  # noqa: F401  (what every fork runs)
    from ..checker import job  # noqa: F401  (imports torch and everything a checker's job uses)

    _warm()
    freeze_heap()
    wake = os.pipe()
    for fd in wake:
        os.set_blocking(fd, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake the select below through the wakeup fd
    signal.set_wakeup_fd(wake[1])
    waiting: dict[int, int] = {}  # checker pid -> the write end of its status pipe
    while True:
        ready, _, _ = select.select([control, wake[0]], [], [])
        if wake[0] in ready:
            while True:
                try:
                    if not os.read(wake[0], 512):
                        break
                except BlockingIOError:
                    break
            _reap(waiting)
        if control not in ready:
            continue
        try:
            msg = protocol.recv(control)
        except (EOFError, ConnectionError, protocol.ProtocolError):  # the parent is done, or gone (killed,
            if os.path.basename(os.getcwd()).startswith("htam-launcher-"):  # os._exit): its folder goes too
                shutil.rmtree(os.getcwd(), ignore_errors=True)
            return
        if msg.body.get("op") != "fork" or len(msg.fds) != 5:
            protocol._close_all(msg.fds)
            protocol.send(control, {"error": "expected {'op': 'fork', 'cwd', 'env'} with 5 descriptors"})
            continue
        blocker = gpu.fork_blocker()
        if blocker is not None:  # a fork would inherit an initialised driver: its CUDA calls would fail
            protocol._close_all(msg.fds)
            protocol.send(control, {"error": f"not forking: {blocker}", "cuda_initialised": blocker})
            continue
        pid = process_tree.fork_child(functools.partial(_child, msg.body, msg.fds, control, wake))
        *theirs, status = msg.fds
        protocol._close_all(theirs)
        waiting[pid] = status
        protocol.send(control, {"pid": pid})
        _reap(waiting)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "--control-fd":
        print("usage: python -m htam_agent.evaluation.launcher --control-fd N (started by the evaluator)",
              file=sys.stderr)
        return 2
    serve(socket.socket(fileno=int(argv[1])))
    # Gone at once, without finalising torch's and inductor's modules (0.7 s on the 2-core VM, which the
    # parent waits for at its own exit): nothing here needs it, its output is flushed.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
