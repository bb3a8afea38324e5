"""The parent side: hand each job to a checker process and read back the verdict it assembled.

The parent never imports candidate code or torch. A checker (checker/) judges one candidate, which runs
in a sandbox process of its own (sandbox/); the parent only enforces a last-resort limit on the checker
and turns a dead checker into a verdict. Jobs are JSON in, JSON out (the job on the checker's stdin, the
verdict on a pipe), with no shared memory: moving the checker to another host (Ray, a queue) is a change
of transport, not a rewrite.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htam_agent.backend_registry import is_cpu, spec

from . import forkserver
from .common import containment, paths
from .common.verdict import STATUSES, Verdict, VerdictBuilder, with_envelope
from .store import VerdictStore, candidate_key, device_name

_PKG_PARENT = str(Path(__file__).resolve().parents[2])
_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION)", re.I)
TIERS = ("bare", "default", "thorough")  # read by the checker from the job (inputs.trial_plan)


@dataclass
class EvalOptions:
    """How to evaluate. Every field that changes a verdict is part of the verdict store's key."""

    backend: str = "cuda"
    size: str | None = None  # None: the backend's default size when the task has it ('small' on the CPU)
    alt_size: str | None = "alt"  # second shape checked (cheat pattern 12); None to skip
    trials: int = 5
    # Checks to run: "default" (what the agent uses: every anti-cheat check that catches patterns 1-13 and
    # most of 14-18), "thorough" (more trials, repeated calls, more re-checked timed outputs), "bare"
    # (correctness trials and timing only: a baseline to measure the checks' cost, never for the agent).
    tier: str = "default"
    timing: bool = True
    baselines: tuple[str, ...] = ("eager", "compile")
    timing_plan: dict[str, Any] = field(default_factory=dict)
    compile_timeout_s: float = 600.0
    run_timeout_s: float = 180.0
    threads: int | None = None
    device_index: int = 0
    build_root: str | None = None
    keep_scratch: bool = False
    prestart: bool = True  # start the next worker process while this one runs
    fast_build: bool = True  # content-addressed builds, per-flag PCH, device arch only
    # The eager baseline timed beside each candidate, in blocks that alternate between the two (the
    # candidate's sandbox frozen while the reference runs), rather than once on its own: None means on for
    # the CPU backends, whose machines drift (timing_fairness in docs/evaluation.md), off on a GPU.
    paired_eager: bool | None = None

    def __post_init__(self) -> None:
        if self.tier not in TIERS:
            raise ValueError(f"unknown tier {self.tier!r}; choose one of: {', '.join(TIERS)}")
        spec(self.backend)  # an unknown backend raises, naming the choices
        self.baselines = tuple(self.baselines)

    def pairs_eager(self) -> bool:
        """Whether candidates are timed beside their eager baseline (`paired_eager`, resolved)."""
        on = is_cpu(self.backend) if self.paired_eager is None else self.paired_eager
        return bool(on and self.timing and "eager" in self.baselines)

    def key_fields(self) -> dict[str, Any]:
        """Fields that decide the verdict (timeouts and paths do not)."""
        fields_ = {"alt_size": self.alt_size, "trials": self.trials, "timing": self.timing, "tier": self.tier,
                   "threads": self.threads if is_cpu(self.backend) else None}
        if self.pairs_eager():  # only when on, so that the keys of unpaired verdicts stay as they were
            fields_["paired_eager"] = True
        return fields_

    def resolve_size(self, task_source: str, task_path: str = "<task>") -> str:
        """The size to evaluate at: the one asked for; else the backend's default size ('small' on the CPU)
        when the task has one (its SMALL_SIZES, or one derived from its size globals: KernelBench files carry
        no dicts)."""
        if self.size:
            return self.size
        want = spec(self.backend).default_size
        if want != "default":
            from .tasks import has_size

            if has_size(task_source, want, task_path):
                return want
        return "default"


MALLOC_MMAP_THRESHOLD = 32 << 20  # glibc's largest: blocks up to 32 MB come from the heap
MALLOC_TRIM_THRESHOLD = 1 << 30   # freed heap memory stays with the process


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


def _tail(path: Path, n: int = 4000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-n:].decode(errors="replace")


class _Spare:
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
            launched = forkserver.spawn(self.scratch, env, self.out, self.err, w)
            self.proc: subprocess.Popen | forkserver.Launched = launched or subprocess.Popen(
                [sys.executable, "-m", "htam_agent.evaluation.checker", "--result-fd", str(w)],
                cwd=self.scratch, env=env, stdout=self.out, stderr=self.err, stdin=subprocess.PIPE,
                pass_fds=(w,), start_new_session=True,  # its own process group: a timeout kills it whole
            )
        finally:
            os.close(w)
        os.set_blocking(self.events, False)


_spare_lock = threading.Lock()
_spares: list[_Spare] = []
SPARES = 2  # enough to hide start-up (~3-4 s on a GPU host) behind jobs of ~2-3 s
#: the checker's phases after the last timed one (roofline's bandwidth probe times too): a CPU job's next
#: checker may start importing while these run
UNTIMED_TAIL = frozenset({"sabotage", "verify_other_init", "verify_other_shape", "done"})
GRACE_S = 30.0  # the checker enforces the phase limits on the candidate; the parent only on the checker


class LaterSpare:
    """A CPU job's next checker, started once this job's timed phases are over (at its untimed tail, or at
    its end; at once for a job that times nothing): its torch imports then overlap checks, not timing."""

    def __init__(self, armed: bool, timed: bool) -> None:
        self.armed, self.timed = armed, timed

    def phase(self, name: str) -> None:
        if self.armed and (name in UNTIMED_TAIL or not self.timed):
            self.finish()

    def finish(self) -> None:
        if self.armed:
            self.armed = False
            _replenish(1)


def _take_spare(prestart: bool) -> _Spare:
    with _spare_lock:
        while _spares and _spares[0].proc.poll() is not None:
            _discard(_spares.pop(0))
        spare = _spares.pop(0) if _spares else _Spare()
    if prestart:
        _replenish()
    return spare


def _replenish(n: int = SPARES) -> None:
    with _spare_lock:
        while len(_spares) < n:
            _spares.append(_Spare())


def _discard(spare: _Spare) -> None:
    for f in (spare.out, spare.err):
        f.close()
    try:
        os.close(spare.events)
    except OSError:
        pass
    _rmtree(spare.scratch)


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
            _kill_group(spare.proc)
            spare.proc.wait()
        _discard(spare)


def _valid_verdict(v: Any) -> bool:
    return (isinstance(v, dict) and v.get("status") in STATUSES and isinstance(v.get("flags"), list)
            and isinstance(v.get("trials"), list) and isinstance(v.get("timing"), dict))


def run_job(job: dict[str, Any], options: EvalOptions) -> dict[str, Any]:
    """Run one job in a checker process to completion or to its limit; always returns a verdict dict: the
    checker's finalized verdict (or the parent's, for a checker that gave none) with the parent's envelope
    (its wall time, the checker's stderr) beside it. The verdict is never edited here.

    On the CPU backend the next checker is started only once this job's timed phases are over (its untimed
    tail, or its end): starting one imports torch in two processes, which would compete with this job's
    timing for the machine's few cores, but its imports may overlap the tail's checks.
    """
    cpu = is_cpu(options.backend)
    spare = _take_spare(options.prestart and (not cpu or job["mode"] == "compile"))
    later = LaterSpare(cpu and options.prestart and job["mode"] != "compile", bool(job.get("timing", True)))
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
        verdict, phase, limit, timed_out_in = _follow(spare, options, phase, since, limit, sandbox,
                                                             later.phase)
    except BaseException:  # interrupted: the checker and its folder go too
        _kill_group(proc)
        _rmtree(scratch)
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
    _rmtree(scratch)
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


def _follow(spare: _Spare, options: EvalOptions, phase: str, since: float, limit: float,
            sandbox: dict[str, Any], on_phase: Callable[[str], None] | None = None
            ) -> tuple[Any, str, float, str | None]:
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
                    if on_phase is not None:
                        on_phase(phase)
                elif event.get("event") == "verdict":
                    verdict = event.get("verdict")
                elif event.get("event") == "sandbox":
                    sandbox.update(event)
                elif event.get("event") == "reference_sandbox":
                    sandbox.setdefault("more", []).append(event)
        if time.time() - since > limit + GRACE_S:
            timed_out_in = phase
            _kill_group(spare.proc)
            break
    return verdict, phase, limit, timed_out_in


def _sweep(sandbox: dict[str, Any]) -> None:
    """A checker that died or was killed could not end its sandboxes: their uids' processes, their sessions."""
    for box in [sandbox, *sandbox.get("more", [])]:
        uid, pid = box.get("uid"), box.get("pid")
        if isinstance(uid, int) and uid >= containment.UID_BASE and os.geteuid() == 0:
            containment.kill_uid(uid)
            containment.remove_owned(uid)
        if isinstance(pid, int) and pid > 1:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _kill_group(proc: subprocess.Popen | forkserver.Launched) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


# --------------------------------------------------------------------------------------------------------


class CandidateError(ValueError):
    """A candidate that cannot be built as given; the message names the file or field and the fix."""


@dataclass
class Candidate:
    """One candidate to evaluate against one task file: its code and the task's source, read once (a task file
    edited later cannot change what the candidate is compiled and timed against).

    Build it with `Candidate.of` (from a source, an LLM's reply or a candidate file); constructing it directly
    runs the same checks in `__post_init__`."""

    task_path: str
    source: str
    name: str = ""
    task_source: str = ""
    origin: str = ""  # the candidate file the source was read from, if any

    def __post_init__(self) -> None:
        if not isinstance(self.source, str):
            raise CandidateError(f"candidate for {self.task_path}: source is a {type(self.source).__name__}, "
                                 "not the code as a string")
        self.task_path = str(self.task_path)
        if not self.task_source:
            self.task_source = _read(self.task_path, "task file", "pass the path of a KernelBench task file")
        if not self.name:
            self.name = Path(self.task_path).stem

    @classmethod
    def of(cls, task_path: str | Path, source: str | None = None, *, source_path: str | Path | None = None,
           name: str = "", task_source: str = "") -> Candidate:
        """The one factory: code given as `source` (a reply, a pasted snippet) or read from `source_path`;
        the task's source read from `task_path` unless given (the one a run started with)."""
        if (source is None) == (source_path is None):
            raise CandidateError(f"candidate for {task_path}: give the code as source or as source_path, not "
                                 f"{'both' if source is not None else 'neither'}")
        origin = ""
        if source_path is not None:
            origin = str(source_path)
            source = _read(origin, "candidate file", "pass the path of a file defining class ModelNew")
        path = Path(task_path).expanduser()
        return cls(task_path=str(path), source=source or "", name=name, task_source=task_source, origin=origin)


def _read(path: str, what: str, fix: str) -> str:
    try:
        return Path(path).expanduser().read_text()
    except FileNotFoundError as exc:
        raise CandidateError(f"{what} {path!r}: no such file; {fix}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise CandidateError(f"{what} {path!r}: cannot read it ({exc}); {fix}") from exc


class Evaluator:
    """Evaluate candidates with caching: verdicts from the store, baselines once per task and run."""

    def __init__(self, options: EvalOptions | None = None, store: VerdictStore | None = None,
                 device: str | None = None) -> None:
        self.options = options or EvalOptions()
        self.store = store
        self.device = device or device_name(self.options.backend)
        self.build_root = self.options.build_root or str(paths.build_dir())
        self._baselines: dict[str, dict[str, Any]] = {}
        self._derived: dict[str, tuple[str, dict[str, Any] | None]] = {}

    # -- keys ------------------------------------------------------------------------------------------
    def key(self, cand: Candidate) -> str:
        size = self.options.resolve_size(cand.task_source, cand.task_path)
        extra = self.options.key_fields()
        derived = self.derived_sizes(cand)
        if derived is not None:  # a derived size is part of what was evaluated (it may change with the deriver)
            extra["derived_sizes"] = derived
        return candidate_key(cand.source, cand.task_source, size, self.options.backend, self.device, extra)

    def baseline_key(self, cand: Candidate) -> str:
        size = self.options.resolve_size(cand.task_source, cand.task_path)
        # Keyed by device, not backend: cuda and triton candidates share the GPU's eager/compile timings.
        device_type = "cpu" if is_cpu(self.options.backend) else "gpu"  # "gpu", not "cuda": stored keys
        extra: dict[str, Any] = {"timing_plan": self.options.timing_plan}
        derived = self.derived_sizes(cand)
        if derived is not None and size != "default":
            extra["derived_sizes"] = derived.get(size)
        return candidate_key("<baseline>" + ",".join(self.options.baselines), cand.task_source, size,
                             device_type, self.device, extra)

    def derived_sizes(self, cand: Candidate) -> dict[str, Any] | None:
        """The small/alt sizes derived for a task file without SMALL_SIZES / ALT_SIZES (KernelBench's files),
        made here once (cached per content) and sent in the job, so that no process near candidate code
        derives sizes or reads their cache; None when the file defines both dicts."""
        cached = self._derived.get(cand.task_path)
        return cached[1] if cached and cached[0] == cand.task_source else self._derive(cand)

    def _derive(self, cand: Candidate) -> dict[str, Any] | None:
        from .tasks import sizes

        derived: dict[str, Any] | None = None
        if not {"small", "alt"} <= sizes.explicit_dicts(cand.task_source, cand.task_path):
            try:
                derived = sizes.derived_overrides(cand.task_source, cand.task_path)
            except Exception:  # a file the deriver cannot read: the checker reports the task's own error
                derived = None
        self._derived[cand.task_path] = (cand.task_source, derived)
        return derived

    def _job(self, cand: Candidate, mode: str, identity: dict[str, Any] | None = None,
             baseline: dict[str, Any] | None = None) -> dict[str, Any]:
        """The job for a checker; `identity` (the store's key, kind, device) and `baseline` (the reference's
        timings) are what the checker needs to finalize the verdict the parent files, speedups included."""
        o = self.options
        return {
            "mode": mode, "backend": o.backend, "task_name": cand.name, "task_path": cand.task_path,
            "task_source": cand.task_source, "candidate_source": cand.source,
            "size": o.resolve_size(cand.task_source, cand.task_path), "alt_size": o.alt_size, "trials": o.trials,
            "tier": o.tier, "timing": o.timing, "timing_plan": o.timing_plan, "baselines": list(o.baselines),
            "paired_eager": o.pairs_eager(),
            "threads": o.threads, "device_index": o.device_index, "build_root": self.build_root,
            "fast_build": o.fast_build, "derived_sizes": self.derived_sizes(cand),
            "identity": identity, "baseline": _baseline_facts(baseline),
        }

    # -- phases ----------------------------------------------------------------------------------------
    def compile_only(self, cand: Candidate) -> dict[str, Any]:
        return run_job(self._job(cand, "compile"), self.options)

    def baseline(self, cand: Candidate, fresh: bool = False) -> dict[str, Any]:
        """Eager (and torch.compile) timings of the task's reference, in a worker that never saw a candidate.

        Measured once per Evaluator. A GPU's baseline is also kept in the store and replayed (a GPU host's
        timings are steady); a CPU's is neither: a shared CPU's load changes from run to run, and an eager time measured slow but
        steady under load, replayed for ever, made every later speedup on that task wrong (a 7.99x seen on
        norm_rmsnorm that a fresh baseline put at 1.20x)."""
        key = self.baseline_key(cand)
        store = None if is_cpu(self.options.backend) else self.store
        if not fresh:
            if key in self._baselines:
                return self._baselines[key]
            if store is not None and (hit := store.get(key)) is not None:
                self._baselines[key] = hit
                return hit
        verdict = run_job(self._job(cand, "baseline", identity={"key": key, "kind": "baseline"}), self.options)
        if verdict["status"] == "accepted":
            self._baselines[key] = verdict
            if store is not None and storable(verdict):  # an unreliable one is measured again next run
                store.put(key, verdict)
        return verdict

    def evaluate(self, cand: Candidate, use_store: bool = True) -> dict[str, Any]:
        key = self.key(cand)
        if use_store and self.store is not None and (hit := self.store.get(key)) is not None:
            return with_envelope(hit, cached=True)
        base = None
        if self.options.timing and self.options.baselines:
            base = self.baseline(cand)
        identity = {"key": key, "kind": "candidate", "device_name": self.device}
        verdict = run_job(self._job(cand, "evaluate", identity=identity, baseline=base), self.options)
        if self.store is not None and storable(verdict):
            self.store.put(key, verdict)
        return verdict

    def evaluate_batch(self, cands: Iterable[Candidate], parallel_compile: int | None = None,
                       progress: Callable[[str, int, int, dict[str, Any] | None], None] | None = None
                       ) -> list[dict[str, Any]]:
        """Compile every uncached candidate in parallel, and verify and time one at a time, in order.

        On a GPU host the two overlap: candidate i is judged as soon as its own build is done, while the
        later builds go on (the first verdict does not wait for the last build). On the CPU backend every
        build finishes first: compilers on the same few cores would slow the timed calls."""
        cands = list(cands)
        n = len(cands)
        todo = [c for c in cands if not (self.store and self.store.get(self.key(c)))]
        workers = max(1, parallel_compile or os.cpu_count() or 1)
        builds: dict[int, Future[dict[str, Any]]] = {}
        pool = ThreadPoolExecutor(workers) if todo and workers > 1 else None
        lock, built = threading.Lock(), [0]

        def report(f: Future[dict[str, Any]]) -> None:
            with lock:
                built[0] += 1
                count = built[0]
            if progress and not f.cancelled() and f.exception() is None:
                progress("compile", count, len(todo), f.result())

        try:
            if pool is not None:
                for c in todo:
                    builds[id(c)] = f = pool.submit(self.compile_only, c)
                    f.add_done_callback(report)
                if is_cpu(self.options.backend):
                    wait(builds.values())
            results = []
            for i, c in enumerate(cands):
                if (f := builds.get(id(c))) is not None:
                    f.result()  # its build is in the shared cache now (a failed one is judged as such below)
                v = self.evaluate(c)
                results.append(v)
                if progress:
                    progress("evaluate", i + 1, n, v)
            return results
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)


def storable(verdict: dict[str, Any]) -> bool:
    """Whether a verdict may be replayed from the store instead of measured again.

    Not stored: verdicts whose cause may lie outside the candidate, measured again next time rather than
    replayed for ever: the evaluator's own failures, timeouts (a lock, a loaded machine, a slow build can
    make one), a build the evaluator failed or a compiler that ran out of disk or memory, processes left
    behind, and timings that were unreliable (a busy machine).
    """
    from .common.builder import environment_failure

    if verdict.get("status") in ("error", "timeout") or verdict.get("leftover_processes"):
        return False
    if any(isinstance(b, dict) and b.get("environment") for b in verdict.get("builds") or []):
        return False
    if verdict.get("status") == "compile_error" and environment_failure(str(verdict.get("compiler_message", ""))):
        return False
    return not any(f.get("name") == "timing_unreliable" for f in verdict.get("flags", []))


def _baseline_facts(base: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a candidate's checker needs of the baseline verdict: its timings, status, reason and flags."""
    if base is None:
        return None
    timing = base.get("timing") if isinstance(base.get("timing"), dict) else {}
    return {"status": base.get("status"), "reason": base.get("reason"),
            "timing": {k: timing[k] for k in ("eager", "compile") if k in timing},
            "flags": [f for f in base.get("flags") or [] if isinstance(f, dict)]}


__all__ = ["Candidate", "CandidateError", "EvalOptions", "Evaluator", "run_job", "scrubbed_env"]
