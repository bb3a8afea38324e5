"""The checker's handle on its sandbox: start it boxed, ask it things with a deadline, read what it hands back.

Everything that comes back is data from an untrusted process: replies are JSON the client validates, and
tensors are mapped from sealed shared memory (CPU) or copied out of CUDA IPC memory into the checker's own
before anyone reads them, so the sandbox cannot change an output after handing it over.
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import containment, protocol

_SIGNAL_HINTS = {"SIGSEGV": "out-of-bounds host or device memory access?",
                 "SIGKILL": "killed, often the out-of-memory killer",
                 "SIGABRT": "an abort (failed assertion or uncaught C++ exception)",
                 "SIGBUS": "misaligned or invalid memory access"}


class SandboxDied(RuntimeError):
    """The sandbox exited or was killed; `reason` says how."""

    def __init__(self, reason: str, returncode: int | None) -> None:
        super().__init__(reason)
        self.reason, self.returncode = reason, returncode


class SandboxTimeout(RuntimeError):
    pass


class CandidateFailed(RuntimeError):
    """A request raised inside the sandbox (the candidate's exception, classified there)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("text", ""))[:300])
        self.kind = error.get("kind") if error.get("kind") in (
            "compile_error", "runtime_error", "out_of_memory", "crashed") else "runtime_error"
        self.text = str(error.get("text", ""))[-8000:]
        self.where = str(error.get("where", ""))[:600]


class SandboxClient:
    """One sandbox process per evaluation, started before the job arrives (imports overlap the wait)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.scratch = Path(tempfile.mkdtemp(prefix="htam-sandbox-"))
        self.user = containment.sandbox_user()
        self.dropped = isinstance(self.user, tuple)
        here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = here
        kwargs: dict[str, Any] = {}
        env = dict(env)
        env["HOME"] = str(self.scratch)
        (self.scratch / "tmp").mkdir()
        env["TMPDIR"] = str(self.scratch / "tmp")  # compilers' temporary files stay inside the box
        if isinstance(self.user, tuple):
            uid, gid = self.user
            containment.chown_tree(self.scratch, uid, gid)
            kwargs.update(user=uid, group=gid, extra_groups=[])
        self.stderr_path = self.scratch / "stderr.txt"
        with open(self.scratch / "stdout.txt", "wb") as out, open(self.stderr_path, "wb") as err:
            if isinstance(self.user, tuple):
                os.fchown(out.fileno(), *self.user)
                os.fchown(err.fileno(), *self.user)
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "htam_agent.evaluation.sandbox", "--fd", str(there.fileno())],
                cwd=self.scratch, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                pass_fds=(there.fileno(),), start_new_session=True, **kwargs)
        there.close()
        self._ids = itertools.count()
        self._maps: dict[str, Any] = {}
        self.ready: dict[str, Any] | None = None
        self.on_event: dict[str, Any] = {}  # messages the sandbox may send during a request (a build it asks for)
        self.device_type = "cpu"

    # -- requests ------------------------------------------------------------------------------------
    def wait_ready(self, timeout: float) -> dict[str, Any]:
        if self.ready is None:
            self.ready = self._recv(timeout).body
        return self.ready

    def request(self, op: str, timeout: float, **body: Any) -> protocol.Message:
        """Send a request and wait for its reply; CandidateFailed if the candidate raised."""
        self.wait_ready(timeout)
        body["op"] = op
        try:
            protocol.send(self.sock, body)
        except OSError as exc:
            raise self._died() from exc
        msg = self._recv(timeout)
        while isinstance(msg.body.get("event"), str) and msg.body["event"] in self.on_event:
            answer = self.on_event[msg.body["event"]](msg)
            handed = answer.pop("_fds", [])  # descriptors the answer hands over (a verified build), closed here
            try:
                protocol.send(self.sock, answer, handed)
            except OSError as exc:
                raise self._died() from exc
            finally:
                protocol._close_all(handed)
            msg = self._recv(timeout)
        if msg.body.get("ok") is not True:
            protocol._close_all(msg.fds)
            err = msg.body.get("error")
            raise CandidateFailed(err if isinstance(err, dict) else {"text": str(err)[:500]})
        return msg

    def ask(self, op: str, timeout: float, **body: Any) -> dict[str, Any]:
        msg = self.request(op, timeout, **body)
        protocol._close_all(msg.fds)
        return msg.body

    def _recv(self, timeout: float) -> protocol.Message:
        self.sock.settimeout(max(timeout, 0.001))
        try:
            return protocol.recv(self.sock)
        except TimeoutError as exc:
            raise SandboxTimeout(f"no answer within {timeout:.0f} s") from exc
        except (EOFError, ConnectionError) as exc:
            raise self._died() from exc
        except protocol.ProtocolError as exc:
            raise CandidateFailed({"kind": "runtime_error",
                                   "text": f"the candidate's process broke the evaluation protocol: {exc}"}) from exc

    def _died(self) -> SandboxDied:
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.wait()
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

        Returns the encoded value (tensors replaced by buffer references) and the buffer ids (to free)."""
        import torch

        tensors: list[tuple[str, Any]] = []

        def collect(t: Any) -> dict[str, Any]:
            tensors.append((str(next(self._ids)), t))
            return {"buffer": tensors[-1][0]}

        encoded = protocol.encode_value(value, collect)
        if not tensors:
            return encoded, []
        ids = [i for i, _ in tensors]
        specs = [{"id": i, "shape": list(t.shape), "dtype": protocol.dtype_name(t.dtype)} for i, t in tensors]
        msg = self.request("alloc", timeout, buffers=specs)
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

    def free(self, ids: list[str], timeout: float) -> None:
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
        finally:
            protocol._close_all(msg.fds)

    # -- the end -------------------------------------------------------------------------------------
    def kill(self) -> int:
        """Kill the sandbox and every process it started (re-parented to the checker, a subreaper)."""
        self._maps.clear()
        try:
            self.sock.close()
        except OSError:
            pass
        n = containment.kill_tree(self.proc.pid)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        return n

    def stderr_tail(self, n: int = 4000) -> str:
        try:
            return self.stderr_path.read_bytes()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def cleanup(self, keep: bool = False) -> None:
        if not keep:
            import shutil

            shutil.rmtree(self.scratch, ignore_errors=True)

