"""One job in one checker process, seen from the parent: the job written to its stdin, its events read from its
pipe until the verdict (or its limit: then it is killed, and its sandboxes with it), the parent's envelope put
beside the verdict; a checker that gave none gets the parent's verdict."""

from __future__ import annotations

import json
import os
import select
import signal
import time
from pathlib import Path
from typing import Any

from htam_agent.backend_registry import is_cpu

from ..common.containment import sandbox_uid
from ..common.verdict import STATUSES, Verdict, VerdictBuilder, with_envelope
from .options import EvalOptions
from .pool import LaterSpare, Spare, kill_group, rmtree, take_spare

GRACE_S = 30.0  # the checker enforces the phase limits on the candidate; the parent only on the checker


def _tail(path: Path, n: int = 4000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-n:].decode(errors="replace")



def _valid_verdict(v: Any) -> bool:
    return (isinstance(v, dict) and v.get("status") in STATUSES and isinstance(v.get("flags"), list)
            and isinstance(v.get("trials"), list) and isinstance(v.get("timing"), dict))


def run_job(job: dict[str, Any], options: EvalOptions) -> dict[str, Any]:
    """Run one job in a checker process to completion or to its limit; always returns a verdict dict: the
    checker's finalized verdict (or the parent's, for a checker that gave none) with the parent's envelope
    (its wall time, the checker's stderr) beside it. The verdict is never edited here.

    On the CPU backend the next checker is started only once this job's checker has given its verdict and
    gone: started earlier, it imported torch beside this job's timing (two processes competing for the
    machine's few cores), and, started at the untimed tail, it and its two sandboxes (~130 MB) sat beside this
    job's peak memory (issue 36). Forked from the launcher it imports nothing; started as a fresh interpreter
    (no launcher), the next job now waits for its imports.
    """
    cpu = is_cpu(options.backend)
    spare = take_spare(options.prestart and (not cpu or job["mode"] == "compile"))
    later = LaterSpare(cpu and options.prestart and job["mode"] != "compile")
    proc, scratch = spare.proc, spare.scratch
    job = dict(job, compile_timeout_s=options.compile_timeout_s, run_timeout_s=options.run_timeout_s,
               keep_scratch=options.keep_scratch)
    t0 = time.time()
    assert proc.stdin is not None
    try:
        proc.stdin.write((json.dumps(job) + "\n").encode())
        proc.stdin.close()
    except BrokenPipeError:
        pass  # it died on start-up; reported below
    phase, since, limit = "start", t0, options.compile_timeout_s
    verdict, timed_out_in = None, None
    sandbox: dict[str, Any] = {}
    try:
        verdict, phase, limit, timed_out_in = _follow(spare, options, phase, since, limit, sandbox)
    except BaseException:  # interrupted: the checker and its folder go too
        kill_group(proc)
        rmtree(scratch)
        raise
    finally:
        proc.wait()
        spare.out.close()
        spare.err.close()
        os.close(spare.events)
        if not _valid_verdict(verdict):  # killed or dead: its sandbox may have outlived it
            _sweep(sandbox)
    wall = time.time() - t0
    if not _valid_verdict(verdict):
        verdict = _no_checker_verdict(job, phase, timed_out_in, limit, proc.returncode, scratch)
    delivered = with_envelope(verdict, wall_seconds=round(wall, 3),
                              checker_stderr_tail=_tail(scratch / "stderr.txt", 2000))
    rmtree(scratch)
    later.finish()
    return delivered


def _no_checker_verdict(job: dict[str, Any], phase: str, timed_out_in: str | None, limit: float,
                        returncode: int | None, scratch: Path) -> Verdict:
    """The verdict of a checker that was killed at its limit or died without one (the job's baseline and
    identity attached as the checker would have)."""
    v = VerdictBuilder(job.get("task_name", ""), job["backend"])
    v.record(phase=phase)
    if timed_out_in is not None:
        what = "compiling" if timed_out_in in ("start", "compile") else f"in phase '{timed_out_in}'"
        v.set_status("timeout", f"timeout: no result after {limit + GRACE_S:.0f} s {what}; the evaluator's "
                     "checker process was killed")
    else:
        v.set_status("error", f"evaluator error: the checker process ended (status {returncode}) during "
                     f"'{phase}' without a verdict; its stderr: " + _tail(scratch / "stderr.txt", 600).strip()[-600:])
    v.set_error(_tail(scratch / "stderr.txt")[-1500:])
    return v.finalize_job(job)


def _follow(spare: Spare, options: EvalOptions, phase: str, since: float, limit: float,
            sandbox: dict[str, Any]) -> tuple[Any, str, float, str | None]:
    """Read the checker's events until it closes its pipe, or kill it at its limit.

    Returns (verdict or None, last phase, its limit, the phase it timed out in or None)."""
    buf, verdict, timed_out_in = b"", None, None
    while True:
        ready, _, _ = select.select([spare.events], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(spare.events, 1 << 20)
            except BlockingIOError:
                chunk = b"?"
            if not chunk:
                break  # the checker closed the pipe: it is done (or dead)
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("event") == "phase":
                    phase, since = str(event.get("phase")), time.time()
                    limit = float(event.get("limit_s") or options.run_timeout_s)
                elif event.get("event") == "verdict":
                    verdict = event.get("verdict")
                elif event.get("event") == "sandbox":
                    sandbox.update(event)
                elif event.get("event") == "reference_sandbox":
                    sandbox.setdefault("more", []).append(event)
        if time.time() - since > limit + GRACE_S:
            timed_out_in = phase
            kill_group(spare.proc)
            break
    return verdict, phase, limit, timed_out_in


def _sweep(sandbox: dict[str, Any]) -> None:
    """A checker that died or was killed could not end its sandboxes: their uids' processes, their sessions."""
    for box in [sandbox, *sandbox.get("more", [])]:
        uid, pid = box.get("uid"), box.get("pid")
        if isinstance(uid, int) and uid >= sandbox_uid.UID_BASE and os.geteuid() == 0:
            sandbox_uid.kill_uid(uid)
            sandbox_uid.remove_owned(uid)
        if isinstance(pid, int) and pid > 1:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

