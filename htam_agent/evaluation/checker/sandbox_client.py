"""The checker's handle on its sandbox: start it boxed, ask it things with a deadline, read what it hands back.

Everything that comes back is data from an untrusted process: replies are JSON the client validates, and
tensors are mapped from sealed shared memory (CPU) or copied out of CUDA IPC memory into the checker's own
before anyone reads them, so the sandbox cannot change an output after handing it over.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import runpy
import secrets
import select
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..common import gpu, protocol
from ..common.containment import cgroup, privileges, process_tree, sandbox_uid, scratch_quota
from ..common.protocol import SandboxTimeout

_SIGNAL_HINTS = {"SIGSEGV": "out-of-bounds host or device memory access?",
                 "SIGKILL": "killed, often the out-of-memory killer",
                 "SIGABRT": "an abort (failed assertion or uncaught C++ exception)",
                 "SIGBUS": "misaligned or invalid memory access"}


class SandboxDied(RuntimeError):
    """The sandbox exited or was killed; `reason` says how."""

    def __init__(self, reason: str, returncode: int | None) -> None:
        super().__init__(reason)
        self.reason, self.returncode = reason, returncode


class ProtocolViolation(RuntimeError):
    """The sandbox sent what the protocol forbids (a malformed, oversized or out-of-order message): the
    candidate's doing, whatever phase it happens in, so no phase may read it as an ordinary failure."""


class CandidateFailed(RuntimeError):
    """A request raised inside the sandbox (the candidate's exception, classified there)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("text", ""))[:300])
        self.kind = error.get("kind") if error.get("kind") in (
            "compile_error", "runtime_error", "out_of_memory", "crashed") else "runtime_error"
        self.text = str(error.get("text", ""))[-8000:]
        self.where = str(error.get("where", ""))[:600]


#: what `SandboxClient.counts` counts: input buffers made (a fresh shared mapping each) and their bytes, input
#: buffers filled again instead, outputs handed back as sealed copies and their bytes, bytes of timed outputs read
#: where they lie (`timed_calls._read_in_place`), and re-checked timed outputs read again unchanged (judged by their
#: digest) or changed (judged against the reference again: `timed_calls.output_digest`), bytes of released outputs
#: filled with NaN (as the sandbox reports them: a count, never evidence)
COUNTS = ("inputs_mapped", "inputs_mapped_bytes", "inputs_refilled", "outputs_sealed", "outputs_sealed_bytes",
          "outputs_read_bytes", "rechecks_unchanged", "rechecks_recomputed", "outputs_poisoned_bytes")

_STARTED = itertools.count()
SANDBOX_MODULE = "htam_agent.evaluation.sandbox"  # started by name, never imported here


class ForkedProcess:
    """A child made by `os.fork`, behind the part of `subprocess.Popen` the client uses (pid, poll, wait)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.returncode = pid, None

    @classmethod
    def start(cls, child: Callable[[], None]) -> ForkedProcess:
        return cls(process_tree.fork_child(child))

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by a sweep of the checker's children (process_tree._reap)
                self.returncode = 0
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0.0)
            time.sleep(0.005)
        return self.returncode  # type: ignore[return-value]


def single_threaded() -> bool:
    """Whether this process has one thread, native ones included: forking is safe only then (a lock another
    thread held at the fork stays held forever in the child)."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def _become_sandbox(env: dict[str, str], scratch: Path, out: int, err: int, sock: int,
                    identity: sandbox_uid.Identity | None) -> None:
    """In the forked child, before anything else runs: what `Popen` and the launcher script do for a fresh
    sandbox. Its own session, stdio to its files, only its socket left open (the checker's pipes, its
    result fd and its client sockets closed), its environment, its uid, limits and no capabilities; then
    dumpable again, as an exec would leave it (the checker is not, and the kernel keeps that through the
    uid change)."""
    os.setsid()
    process_tree.set_name("htam-sandbox")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.dup2(sock, 3)
    os.closerange(4, 1 << 20)
    os.chdir(scratch)
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # the launcher's cached choice (its TMPDIR): the sandbox's is its scratch's tmp/
    gpu.set_role("sandbox")
    if identity is not None:
        privileges.become(identity.uid, identity.gid, identity.read_all, sandbox_uid.nproc_limit(),
                           sandbox_uid.file_limit())
    process_tree.make_dumpable()
    # The sandbox's own module, run by name as `python -m` would (the checker never imports it): torch and
    # everything it needs are loaded already, so this costs ~10 ms instead of an interpreter's start.
    sys.argv = [SANDBOX_MODULE, "--fd", "3"]
    runpy.run_module(SANDBOX_MODULE, run_name="__main__", alter_sys=True)


class SandboxClient:
    """One sandbox process per evaluation, started before the job arrives (imports overlap the wait)."""

    def __init__(self, env: dict[str, str], forked: bool = False, watch: bool = True) -> None:
        """`forked`, where this checker was forked from the launcher (launcher/) and has read no job yet:
        the sandbox is a fork of this process that becomes the sandbox's user and runs the sandbox's module
        by name; otherwise (or if a thread already runs here) a fresh interpreter is started (`python -m`).
        `watch=False`: the quota's watchdog thread starts at `start_watch()`, so that another sandbox can
        still be forked from a single-threaded process."""
        self.scratch = Path(tempfile.mkdtemp(prefix="htam-sandbox-"))
        who = sandbox_uid.sandbox_user()
        self.identity = who if isinstance(who, sandbox_uid.Identity) else None
        self.user: tuple[int, int] | str | None = (who.uid, who.gid) if self.identity else who  # type: ignore[union-attr]
        self.dropped = self.identity is not None
        self.user_text = self.identity.describe() if self.identity else (
            "the evaluator's own" + (f" (not dropped: {who})" if who else ""))
        here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = here
        env = dict(env)
        env["HOME"] = str(self.scratch)
        (self.scratch / "tmp").mkdir()
        env["TMPDIR"] = str(self.scratch / "tmp")  # compilers' temporary files stay inside the box
        argv = [sys.executable, "-m", SANDBOX_MODULE, "--fd", str(there.fileno())]
        if self.identity:
            sandbox_uid.chown_tree(self.scratch, self.identity.uid, self.identity.gid)
            argv = sandbox_uid.launch_command(self.identity, argv)
        self.stderr_path = self.scratch / "stderr.txt"
        with open(self.scratch / "stdout.txt", "wb") as out, open(self.stderr_path, "wb") as err:
            if self.identity:
                os.fchown(out.fileno(), self.identity.uid, self.identity.gid)
                os.fchown(err.fileno(), self.identity.uid, self.identity.gid)
            blocker = gpu.fork_blocker() if forked else None
            if blocker is not None:  # a fork would inherit an initialised driver: its CUDA calls would fail
                print(f"htam: not forking the sandbox ({blocker}); it starts as a fresh interpreter",
                      file=sys.stderr, flush=True)
            if forked and blocker is None and single_threaded():
                self.proc: subprocess.Popen | ForkedProcess = ForkedProcess.start(
                    lambda: _become_sandbox(env, self.scratch, out.fileno(), err.fileno(), there.fileno(),
                                            self.identity))
            else:
                self.proc = subprocess.Popen(
                    argv, cwd=self.scratch, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                    pass_fds=(there.fileno(),), start_new_session=True)
        # Before it runs any candidate code (that waits for the job): its own cgroup, and the quota's eye.
        n = next(_STARTED)  # a checker may hold two sandboxes (the reference's, for paired timing)
        self.cgroup = cgroup.Cgroup.create(f"htam-sandbox-{os.getpid()}" + (f"-{n}" if n else ""))
        if self.cgroup is not None and not self.cgroup.add(self.proc.pid):
            self.cgroup.kill()
            self.cgroup = None
        self.quota = scratch_quota.Quota(scratch_quota.quota(), self._over_quota, start=watch)
        self.quota.watch(str(self.scratch))
        self._loose_before: dict[str, set[str]] = {}
        there.close()
        self._ids = itertools.count()
        self._maps: dict[str, Any] = {}
        self.reuse_inputs = False  # freed input buffers kept for the next upload (`upload`, `release_spare`)
        self._spare: list[str] = []
        # Full-size traffic between the two processes, for the verdict's phase costs (checker/state.py)
        self.counts: dict[str, int] = dict.fromkeys(COUNTS, 0)
        self.ready: dict[str, Any] | None = None
        self.device_type = "cpu"
        self.on_event: dict[str, Callable[[protocol.Message], dict[str, Any]]] = {}

    def start_watch(self) -> None:
        self.quota.start()

    # -- requests ------------------------------------------------------------------------------------
    def wait_ready(self, timeout: float) -> dict[str, Any]:
        if self.ready is None:
            self.ready = self._recv(timeout).body
        return self.ready

    def request(self, op: str, timeout: float, **body: Any) -> protocol.Message:
        """Send a request and wait for its reply; CandidateFailed if the candidate raised.

        Each request carries a fresh nonce that its reply must echo. A message waiting before the request
        was sent, or a reply with another nonce, is a protocol violation by the candidate's process (a
        forged reply sent ahead, or a real one held back). Messages the sandbox may send while a request
        runs (`{"event": NAME, "nonce": ...}`, e.g. a build it asks the trusted side for) go to
        `self.on_event[NAME]`, whose answer is sent back before waiting on."""
        self.wait_ready(timeout)
        if self._pending():
            raise self._violation(f"it sent a message before the '{op}' request was made (a forged or early reply)")
        nonce = secrets.token_hex(8)
        body["op"], body["nonce"] = op, nonce
        try:
            protocol.send(self.sock, body)
        except OSError as exc:
            raise self._died() from exc
        while True:
            msg = self._recv(timeout)
            if msg.body.get("nonce") != nonce:
                protocol._close_all(msg.fds)
                raise self._violation(f"its answer to '{op}' did not echo the request's nonce (a reply out of "
                                      "order, unasked or forged)")
            event = msg.body.get("event")
            if event is None:
                break
            handler = self.on_event.get(event) if isinstance(event, str) else None
            if handler is None:
                protocol._close_all(msg.fds)
                raise self._violation(f"it sent an unknown event {str(event)[:40]!r} during '{op}'")
            answer = handler(msg)
            answer["nonce"] = nonce
            handed = answer.pop("_fds", [])  # descriptors the answer hands over (a verified build), closed here
            try:
                protocol.send(self.sock, answer, handed)
            except OSError as exc:
                raise self._died() from exc
            finally:
                protocol._close_all(handed)
        if msg.body.get("ok") is not True:
            protocol._close_all(msg.fds)
            err = msg.body.get("error")
            raise CandidateFailed(err if isinstance(err, dict) else {"text": str(err)[:500]})
        return msg

    def ask(self, op: str, timeout: float, **body: Any) -> dict[str, Any]:
        msg = self.request(op, timeout, **body)
        protocol._close_all(msg.fds)
        if op == "release" and type(msg.body.get("poisoned_bytes")) is int:  # the sandbox's word: a count only
            self.counts["outputs_poisoned_bytes"] += msg.body["poisoned_bytes"]
        return msg.body

    def _pending(self) -> bool:
        """Whether the sandbox has sent anything nobody asked for (a poll, never a wait: a socket with a
        timeout would wait in recv even with MSG_DONTWAIT)."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            return bool(readable) and bool(self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except (BlockingIOError, InterruptedError, ValueError):
            return False
        except OSError:
            return False  # gone: the next receive says how

    @staticmethod
    def _violation(what: str) -> ProtocolViolation:
        return ProtocolViolation(f"the candidate's process broke the evaluation protocol: {what}")

    def _recv(self, timeout: float) -> protocol.Message:
        self.sock.settimeout(max(timeout, 0.001))
        try:
            return protocol.recv(self.sock, limit=protocol.MAX_REPLY)
        except TimeoutError as exc:
            raise SandboxTimeout(f"no answer within {timeout:.0f} s") from exc
        except (EOFError, ConnectionError) as exc:
            raise self._died() from exc
        except protocol.ProtocolError as exc:
            raise self._violation(str(exc)) from exc

    def _died(self) -> SandboxDied:
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.wait()
        if self.quota.over:
            return SandboxDied(f"the candidate's process was killed: {self.quota.over}", rc)
        if rc is not None and rc < 0:
            import signal

            sig = {int(s): s.name for s in signal.Signals}.get(-rc, str(-rc))
            hint = _SIGNAL_HINTS.get(sig, "")
            return SandboxDied(f"the candidate's process died with {sig}" + (f" ({hint})" if hint else ""), rc)
        return SandboxDied(f"the candidate's process exited with status {rc} without answering (does the "
                           "candidate call exit() or os._exit()?)", rc)

    # -- tensors -------------------------------------------------------------------------------------
    def upload(self, value: Any, timeout: float) -> tuple[Any, list[str]]:
        """Put every tensor of `value` into buffers the sandbox allocates and the checker fills.

        Returns the encoded value (tensors replaced by buffer references) and the buffer ids (to free).

        With `reuse_inputs` (CPU), a buffer freed earlier of the same shape and dtype is filled again instead of a
        new one being made: a fresh memfd is a full-size mapping that the checker's copy page-faults in and the
        sandbox's first read maps again (0.4 s for 256 MiB on the loaded VM, 0.1 s refilled), and a 1 GiB verdict
        made ten of them for inputs of one shape. Why it is safe: every element is overwritten here before the
        request that reads it, as a fresh buffer's would be, and the inputs are compared with the checker's
        pristine copy after each call, as before; what the candidate may do with a buffer it was handed earlier
        (keep it, write it later) reaches only its own later inputs, whose outputs are compared with the
        reference's on the checker's pristine inputs, so it can only fail itself; a cache keyed on the buffer's
        address or identity replays an answer for other inputs, which the comparison turns down. Spare
        buffers that this upload does not take are freed first, so at most one set is held beyond its use."""
        tensors: list[tuple[dict[str, Any], Any]] = []

        def collect(t: Any) -> dict[str, Any]:
            tensors.append(({"buffer": ""}, t))
            return tensors[-1][0]

        encoded = protocol.encode_value(value, collect)
        if not tensors:
            return encoded, []
        spare, self._spare = self._spare, []
        reused: list[tuple[str, Any]] = []
        fresh: list[tuple[str, Any]] = []
        for ref, t in tensors:
            match = next((i for i in spare if self._fits(i, t)), None)
            if match is not None:
                spare.remove(match)
                reused.append((match, t))
            else:
                fresh.append((str(next(self._ids)), t))
            ref["buffer"] = (reused if match is not None else fresh)[-1][0]
        self._free_now(spare, timeout)  # none of these is asked for here: gone before new ones are made
        ids = [str(ref["buffer"]) for ref, _ in tensors]
        import torch

        with torch.no_grad():
            for i, t in reused:
                self._maps[i].copy_(t)
        self.counts["inputs_refilled"] += len(reused)
        if not fresh:
            return encoded, ids
        specs = [{"id": i, "shape": list(t.shape), "dtype": protocol.dtype_name(t.dtype)} for i, t in fresh]
        msg = self.request("alloc", timeout, buffers=specs)
        try:
            return self._fill(msg, fresh, encoded, ids)
        except protocol.ProtocolError as exc:
            raise self._violation(str(exc)) from exc

    def _fits(self, buffer_id: str, t: Any) -> bool:
        view = self._maps.get(buffer_id)
        return view is not None and tuple(view.shape) == tuple(t.shape) and view.dtype == t.dtype

    def release_spare(self, timeout: float) -> None:
        """Stop keeping freed input buffers, and free those kept (before a phase that needs the room)."""
        self.reuse_inputs = False
        spare, self._spare = self._spare, []
        self._free_now(spare, timeout)

    def _fill(self, msg: protocol.Message, tensors: list[tuple[str, Any]], encoded: Any, ids: list[str]
              ) -> tuple[Any, list[str]]:
        import torch

        try:
            descs = msg.body.get("buffers")
            if not isinstance(descs, dict):
                raise protocol.ProtocolError("alloc answered without buffers")
            for i, t in tensors:
                view = self.open_shared(descs.get(i), msg.fds)
                if tuple(view.shape) != tuple(t.shape) or view.dtype != t.dtype:
                    raise protocol.ProtocolError("the sandbox allocated a buffer of another shape or dtype")
                with torch.no_grad():
                    view.copy_(t)
                self._maps[i] = view
                self.counts["inputs_mapped"] += 1
                self.counts["inputs_mapped_bytes"] += t.numel() * t.element_size()
        finally:
            protocol._close_all(msg.fds)
        if self.device_type == "cuda":
            torch.cuda.synchronize()
        return encoded, ids

    def shared(self, buffer_id: str) -> Any:
        """The checker's view of a buffer it uploaded (writes to it reach the sandbox's tensor)."""
        return self._maps[buffer_id]

    def shared_values(self, encoded: Any) -> Any:
        """The checker's views of an uploaded value's buffers, in the value's structure."""
        return protocol.decode_value(encoded, lambda ref: self._maps[str(ref["buffer"])])

    def free(self, ids: list[str], timeout: float, keep: bool = True) -> None:
        """Free input buffers; with `reuse_inputs` on the CPU, keep them for the next upload (`upload`), unless
        `keep` is False (a model's weights and init arguments: no call's inputs, never asked for again)."""
        if keep and self.reuse_inputs and self.device_type == "cpu":
            self._spare += [i for i in ids if i in self._maps]
            return
        self._free_now(ids, timeout)

    def _free_now(self, ids: list[str], timeout: float) -> None:
        for i in ids:
            self._maps.pop(i, None)
        if ids:
            self.ask("free", timeout, ids=ids)

    def open_shared(self, desc: Any, fds: list[int]) -> Any:
        if isinstance(desc, dict) and desc.get("kind") == "cuda_ipc":
            return protocol.map_cuda(desc)
        t, m = protocol.map_cpu(desc, fds, writable=True)
        return t

    def open_output(self, desc: Any, fds: list[int]) -> Any:
        """An output the sandbox handed back, as the checker's own tensor (copied out of IPC memory)."""
        if isinstance(desc, dict) and desc.get("kind") == "cuda_ipc":
            shared = protocol.map_cuda(desc)
            own = shared.clone()
            del shared
            return own
        t, _m = protocol.map_cpu(desc, fds, writable=False)
        self.counts["outputs_sealed"] += 1
        self.counts["outputs_sealed_bytes"] += t.numel() * t.element_size()
        return t

    def outputs(self, msg: protocol.Message) -> tuple[Any, list[dict[str, Any]], str | None]:
        """(value, facts, problem) of a reply carrying outputs; the fds are closed here."""
        try:
            facts = msg.body.get("facts")
            if not isinstance(facts, list):
                raise protocol.ProtocolError("outputs without facts")
            if msg.body.get("value") is None:
                return None, facts, str(msg.body.get("unsendable") or "the output could not be handed back")
            value = protocol.decode_value(msg.body["value"], lambda d: self.open_output(d, msg.fds))
            return value, facts, None
        except protocol.ProtocolError as exc:  # an unsealed fd, a malformed description: the candidate's
            raise self._violation(str(exc)) from exc
        finally:
            protocol._close_all(msg.fds)

    # -- the end -------------------------------------------------------------------------------------
    def build_folder(self, base: str) -> str:
        """The build folder below `base` for sandboxes with a uid of their own: one for all slots (so a
        build made in one slot is found from the next), root's, writable through their shared group."""
        assert self.identity is not None
        folder = os.path.join(base, "uids")
        os.makedirs(folder, exist_ok=True)
        os.chown(folder, 0, self.identity.gid)
        os.chmod(folder, 0o2775)  # set-group-id: what is made below stays the group's
        return folder

    def watch(self, folder: str) -> None:
        """Count what the sandbox adds below `folder` (its build folder) against its scratch quota; loose
        files it leaves at the top of that folder (never a build: those are folders) go at `cleanup`."""
        self.quota.watch(folder)
        try:
            self._loose_before[folder] = set(os.listdir(folder))
        except OSError:
            pass

    def _remove_loose(self) -> None:
        for folder, before in self._loose_before.items():
            try:
                entries = [e for e in os.scandir(folder) if e.name not in before and not e.name.endswith(".lock")]
            except OSError:
                continue
            for e in entries:
                try:
                    st = e.stat(follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode) or (self.identity and st.st_uid != self.identity.uid):
                        continue
                    os.unlink(e.path)
                except OSError:
                    pass

    def _over_quota(self, reason: str) -> None:
        """The quota watchdog's verdict (its thread): the sandbox goes now, and `_died` says why."""
        self._kill_processes()

    def _kill_processes(self) -> None:
        if self.cgroup is not None:
            self.cgroup.kill()
        if self.identity is not None:
            sandbox_uid.kill_uid(self.identity.uid)
        try:
            os.killpg(self.proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            pass

    def _processes(self, keep: set[int], strays: bool) -> list[int]:
        found = {self.proc.pid, *process_tree.descendants(self.proc.pid)}
        if strays:  # escaped ones come back to the checker (a subreaper): all its others but `keep`'s
            found |= set(process_tree.descendants(keep=keep))
        if self.identity is not None:
            found |= set(sandbox_uid.processes_of(self.identity.uid))
        return sorted(found - keep)

    @contextlib.contextmanager
    def paused(self, keep: set[int], strays: bool = True) -> Iterator[None]:
        """Every process of this sandbox stopped for the block's duration (while another sandbox is timed,
        so that nothing the candidate left running takes that sandbox's cores): its cgroup frozen, else
        SIGSTOP to its own tree, its uid's processes and, with `strays` (the candidate's sandbox), the
        checker's other descendants outside `keep` (the other sandbox's tree)."""
        stopped: set[int] = set()
        group = self.cgroup
        frozen = group is not None and group.freeze(True)
        try:
            if not frozen:
                for _ in range(20):  # until no new process appears: one may fork while we look
                    todo = [p for p in self._processes(keep, strays) if p not in stopped]
                    if not todo:
                        break
                    process_tree.signal_all(todo, signal.SIGSTOP)
                    stopped.update(todo)
            yield
        finally:
            if group is not None:  # thawed even when freezing timed out (it may have taken effect since)
                group.freeze(False)
            process_tree.signal_all(sorted(stopped), signal.SIGCONT)

    def _hang_up(self) -> None:
        self._maps.clear()
        self.quota.stop()
        try:
            self.sock.close()
        except OSError:
            pass

    def kill(self) -> int:
        """Kill the sandbox and every process it started: its cgroup, every process of its uid, then every
        descendant of the checker (a subreaper: orphans come back to it), stopped before they are killed."""
        self._hang_up()
        self._kill_processes()
        n = process_tree.kill_tree(self.proc.pid)
        try:
            self.proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, ChildProcessError):
            pass
        self.cgroup = None
        return n

    def discard(self) -> None:
        """Kill this sandbox alone and remove its folder, while the checker's other sandbox goes on (`kill`
        takes every descendant of the checker): its cgroup, its uid's processes, its session, its own tree."""
        self._hang_up()
        tree = process_tree.descendants(self.proc.pid)
        self._kill_processes()
        process_tree.signal_all(sorted(tree), signal.SIGKILL)
        try:
            self.proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, ChildProcessError):
            pass
        self.cgroup = None
        self.cleanup()

    def leftovers(self) -> list[int]:
        """Processes of this sandbox still alive (after `kill`, none): its uid's, and the checker's
        descendants."""
        left = set(process_tree.descendants())
        if self.identity is not None:
            left |= set(sandbox_uid.processes_of(self.identity.uid))
        return sorted(left)

    def stderr_tail(self, n: int = 4000) -> str:
        try:
            return self.stderr_path.read_bytes()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def cleanup(self, keep: bool = False) -> None:
        """Remove the scratch folder and whatever the sandbox's uid left in the shared temporary folders,
        then give the uid back (after `kill`)."""
        if not keep:
            import shutil

            shutil.rmtree(self.scratch, ignore_errors=True)
        self._remove_loose()
        if self.identity is not None:
            if keep:  # kept for a person to read: no longer the uid's, so the slot's next sweep leaves it
                sandbox_uid.chown_tree(self.scratch, os.getuid(), os.getgid())
            sandbox_uid.remove_owned(self.identity.uid)
            self.identity.release()
