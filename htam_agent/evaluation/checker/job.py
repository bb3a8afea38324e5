"""The checker's job entry: one job's run from its first phase to its verdict (not yet finalized), every failure
of the candidate turned into the verdict's status, never an exception."""

from __future__ import annotations

import os
import traceback
from typing import Any

import torch

from ..backends import get_backend
from ..common.containment import memory_cap
from ..common.verdict import VerdictBuilder
from ..tasks import TaskError, load_task_source
from . import heap
from . import inputs as inp
from .phases import HARNESS_OOM, bare, baseline, evaluate, pairs
from .sandbox_client import CandidateFailed, ProtocolViolation, SandboxClient, SandboxDied, SandboxTimeout
from .state import COMPILE_PHASES, Events, Run


def run_job(job: dict[str, Any], events: Events, sandbox: SandboxClient | None,
            reference: SandboxClient | None = None) -> VerdictBuilder:
    """Evaluate one job; always returns its verdict, not yet finalized (the candidate's failures are verdicts,
    not exceptions): `checker/__main__` adds what it learns after the sandbox is gone, then finalizes once.
    `reference`: a sandbox started before the job, for the reference when the job is paired (else killed)."""
    heap.give_back_freely()  # after the sandboxes' forks: theirs keep the evaluation's steady setting
    verdict = VerdictBuilder(job.get("task_name", ""), job["backend"])
    seed = job.get("seed")
    run = Run(job=job, verdict=verdict, events=events, sandbox=sandbox,
              seed=int(seed) if isinstance(seed, int) else inp.secret_seed())
    if sandbox is not None and pairs(job):
        if reference is not None:
            run.ref_sandbox, reference = reference, None
        else:  # started now: its imports overlap the candidate's build
            run.ref_sandbox = SandboxClient(env=dict(os.environ))
            events.emit({"event": "reference_sandbox", "pid": run.ref_sandbox.proc.pid,
                         "uid": run.ref_sandbox.identity.uid if run.ref_sandbox.identity else None})
    if reference is not None:  # not needed: it goes before the candidate's sandbox is asked anything
        reference.discard()
    try:
        _dispatch(run)
    finally:
        if run.ref_sandbox is not None:
            run.ref_sandbox.kill()
            run.ref_sandbox.cleanup()
    _over_cap(run)
    verdict.record(phase=run.phase)
    run.enter("done")
    for name, seconds in run.seconds.items():
        verdict.time_phase(name, seconds)
    verdict.record(phase_costs={phase: {(k[:-6] + "_mib" if k.endswith("_bytes") else k): (
        round(v / 2**20, 1) if k.endswith("_bytes") else v) for k, v in cost.items()}
        for phase, cost in run.costs.items() if cost})
    verdict.record(seed=run.seed)
    return verdict


def _over_cap(run: Run) -> None:
    """An allocation refused under the candidate's memory cap (or an OOM kill inside its cgroup) is the
    candidate's verdict, and its reason says so."""
    cap = run.memory_cap
    if cap is None:
        return
    group = run.sandbox.cgroup.path if run.sandbox is not None and run.sandbox.cgroup is not None else None
    killed = run.verdict.status == "crashed" and memory_cap.oom_kills(group) > 0
    if run.verdict.status == "out_of_memory" or killed:
        fp = cap.get("footprint_bytes")
        share = (f"{memory_cap.FOOTPRINTS} x the task's footprint of {fp / 2**30:.2f} GiB + "
                 f"{memory_cap.HEADROOM >> 30} GiB" if fp is not None else "HTAM_SANDBOX_MEMORY_MB")
        run.verdict.set_status("out_of_memory", (
            f"out of memory during {run.phase}: the candidate's processes may hold {cap['allowed_bytes'] / 2**30:.2f} "
            f"GiB beyond what its sandbox held at the start ({share}; {cap['how']}) and asked for more: "
            f"{str(run.verdict.get('reason') or '')[:300]}"))


def _dispatch(run: Run) -> None:
    """Run the job's phases; every failure becomes the verdict's status (never an exception out of here)."""
    job, verdict, sandbox = run.job, run.verdict, run.sandbox
    try:
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32 for the reference and the baselines
        torch.backends.cudnn.allow_tf32 = False
        run.backend = get_backend(job["backend"])
        run.backend.prepare(job["build_root"], job.get("threads"), fast_build=job.get("fast_build", True))
        run.device = run.backend.device(job.get("device_index", 0))
        if run.device.type == "cuda":
            torch.cuda.set_device(run.device)
        if sandbox is not None:
            sandbox.device_type = run.device.type
        verdict.record(device=run.backend.device_info())
        run.task = load_task_source(job["task_source"], job["task_path"], size=job["size"],
                                    name=job.get("task_name"), check_inputs=False,
                                    derived=job.get("derived_sizes"))
        verdict.record(size=job["size"])
        if job.get("fit_note"):  # the parent ran the task at a size that fits this device (parent/fit.py)
            verdict.warn(str(job["fit_note"])[:400])
        for note in job.get("notes") or []:  # what an earlier job of this candidate found (parent/evaluator.py)
            verdict.warn(str(note)[:600])
        if job["mode"] == "baseline":
            baseline(run)
        elif run.tier == "bare":
            bare(run)
        else:
            evaluate(run)
    except TaskError as exc:
        verdict.set_status("error", f"task error: {exc}")
    except SandboxTimeout:
        what = "compiling" if run.phase in COMPILE_PHASES else f"in phase '{run.phase}'"
        verdict.set_status("timeout", f"timeout: no result {what} within its limit; the candidate's processes "
                           "were killed (an infinite loop, a deadlock, or a kernel that never finishes?)")
    except SandboxDied as exc:
        verdict.set_status("crashed", f"crashed: {exc.reason} during '{run.phase}'")
        if run.phase in COMPILE_PHASES and sandbox is not None:
            verdict.set_compile(message=sandbox.stderr_tail())
    except ProtocolViolation as exc:  # the candidate's doing, whatever it computed
        verdict.reject("protocol_violation", f"{str(exc)[:400]} (during {run.phase})")
    except CandidateFailed as exc:
        verdict.set_status(exc.kind, f"{exc.kind.replace('_', ' ')} during {run.phase}: {exc.text[:400]}")
        verdict.set_error(exc.text[-1500:])
    except BaseException as exc:  # the checker's own failure, out of memory included: never the candidate's
        what = (HARNESS_OOM if isinstance(exc, (torch.OutOfMemoryError, MemoryError))
                or "can't allocate memory" in str(exc) else "evaluator error")
        verdict.set_status("error", f"{what} during {run.phase}: {type(exc).__name__}: {str(exc)[:300]}")
        verdict.set_error(traceback.format_exc()[-3000:])

__all__ = ["run_job"]
