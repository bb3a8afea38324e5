"""The checker's phases: how the trusted process assembles every verdict. It never imports candidate code.

The process starts in `checker/__main__.py` (`python -m htam_agent.evaluation.checker`, started by the parent:
parent/pool.py), which hands the job to `job.run_job`; each phase here takes the run's state (`state.Run`).

It loads the task, draws the inputs from seeds only it knows, runs the reference, and drives a sandbox
process (`evaluation/sandbox/`) that runs the candidate: every output the candidate hands back is compared here, its
timings are bounded by this process's own clock, and the verdict goes to the parent through a pipe the
sandbox never holds. The checker is a child subreaper and kills every process the candidate started when
the evaluation ends.

`evaluate` is the ordered list of phases in `PHASES`: static checks, compile, first call, trials, evidence
(tampering, launches, PyTorch ops), timing, roofline, sabotage, other init arguments, other shape. Each
phase takes the run and says whether to go on.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from typing import Any

import torch

# torch._dynamo is not imported up front: torch.compile runs only in a baseline's sandbox, this process has no
# tamper snapshot that dynamo's patches (it wraps torch.manual_seed) could upset, and only the roofline of an
# accepted candidate needs it (FlopCounterMode imports it). It was 1.1 s of every checker's 3 s of imports.
import torch.autograd.profiler  # noqa: F401
import torch.utils.flop_counter  # noqa: F401

from ..common import builder, observe, protocol
from ..common.containment import landlock, memory_cap
from ..common.malloc import MALLOC_MMAP_THRESHOLD
from ..common.verdict import VerdictBuilder
from . import correctness, judge, roofline, static, timing
from . import inputs as inp
from .sandbox_client import CandidateFailed, SandboxDied, SandboxTimeout
from .state import Events, Run
from .timed_calls import calibrate, free_cached, reference_outputs, time_candidate, time_paired

#: a harness out-of-memory, in the checker or in a sandbox before candidate code ran: never the candidate's
HARNESS_OOM = ("the evaluator ran out of memory (the harness, not the candidate: the task may be too large for "
               "this device at this size; try --size small)")

# --------------------------------------------------------------------------------------------------------
# Models and values on the checker's side


def build_reference(task: Any, device: Any, init: list[Any] | None = None) -> tuple[Any, list[Any]]:
    with torch.device(device):
        init = task.get_init_inputs() if init is None else init
        torch.manual_seed(0)
        ref = task.model_cls(*init).to(device)
    return ref, init


def build_candidate(run: Run, slot: str, ref: Any, init: list[Any]) -> None:
    """ModelNew(*init) in the sandbox, with the reference's weights when the parameter names match."""
    init_enc, init_ids = run.sb.upload(list(init), run.left())
    state_enc, state_ids = run.sb.upload({k: v.detach() for k, v in ref.state_dict().items()}, run.left())
    try:
        run.sb.ask("build", run.left(), slot=slot, init=init_enc, state=state_enc, seed=0)
    finally:
        run.sb.free(init_ids + state_ids, run.left(), keep=False)  # held beside the next inputs otherwise


def finite(values: Any) -> bool:
    return all(correctness.all_finite(t) for t in observe.flatten_outputs(values)
               if isinstance(t, torch.Tensor) and t.is_floating_point())


def forward_failed(v: VerdictBuilder, exc: CandidateFailed, where_label: str) -> None:
    """Record an exception raised while running the candidate (a Triton compile error counts as compiling)."""
    error = exc.text[-1500:] + (f" ({exc.where})" if exc.where else "")
    v.set_status(exc.kind)
    v.set_correct(False)
    v.set_error(error)
    if exc.kind == "compile_error":
        v.set_compile(compiled=False, message=exc.text[-8000:])
    else:
        v.set_reason(f"{exc.kind.replace('_', ' ')} {where_label}: {error[:400]}")


# --------------------------------------------------------------------------------------------------------
# Trials


def poison_below(run: Run) -> int | None:
    """The size from which a trial's released outputs are not filled with NaN (None: all of them are).

    The poison shows an output allocated but never written (cheat 1) where the next call could be handed the freed
    block holding the right numbers. Between trials that cannot happen: every trial draws inputs of its own, so a
    freed block holds numbers for other inputs, which the comparison turns down as it would NaN; the calls that
    repeat inputs are poisoned apart (the first call before the first trial, the thorough tier's repeats) or hold
    the earlier output (the first trial's second call). On the CPU, what is also true: a block from the sandbox's
    mmap threshold up (`common/malloc.MALLOC_MMAP_THRESHOLD`) is a mapping of its own, given back when freed, so
    the NaN block is a fresh mapping page-faulted, filled and unmapped that no later allocation sees (1 GiB of each per
    trial of the 1 GiB ReLU; issue 36). Smaller blocks, and every block on a GPU, are still poisoned."""
    return None if run.device.type == "cuda" else MALLOC_MMAP_THRESHOLD


def run_trials(run: Run, task: Any, ref: Any, slot: str, trials: list[tuple[str, str, int]],
               second_calls: int = 1) -> bool:
    """Correctness trials; True when all ran and passed. Rejecting flags are added to the verdict.

    Each trial: inputs drawn here, the reference run here on them, the inputs copied into the sandbox's
    buffers, one call; the buffers compared with the pristine inputs afterwards (pattern 2); the first
    `second_calls` trials call the candidate again on fresh buffers while the first output is still held in
    the sandbox (pattern 1); outputs released and their blocks poisoned in the sandbox.

    Memory (issue 36): one full-size copy of each thing at a time. The checker holds the pristine inputs and
    the reference's outputs, the sandbox one buffer set and its live outputs, and an output handed back is
    compared and let go before the next call; for the second call the reference's outputs are dropped and
    computed again after it (one more forward instead of a fourth full-size output held).
    """
    v, sb, device = run.verdict, run.sb, run.device
    threads_added = 0
    for k_trial, (name, dist, offset) in enumerate(trials):
        pristine = inp.make_inputs(task, device, run.seed + offset, dist)
        ref_out = reference_outputs(run, ref, pristine)
        if not finite(ref_out) and dist != "task":
            v.add_trial({"trial": name, "passed": True, "skipped": "reference not finite on these inputs"})
            del ref_out, pristine
            continue
        if k_trial == 0 and slot == "main":
            trivial = correctness.trivial_answers_pass(ref_out)
            if trivial:
                v.add_flag("degenerate_task", f"trivial outputs ({', '.join(trivial)}) also pass this task's "
                           "tolerance; its speedups say little", rejects=False)
        enc, ids = sb.upload(pristine, run.left())
        msg = sb.request("call", run.left(), slot=slot, inputs=enc, out_id="t1")
        info1 = msg.body
        out1, facts1, prob1 = sb.outputs(msg)
        changed = inp.changed_inputs(pristine, sb.shared_values(enc))
        sb.free(ids, run.left())
        res1 = judge.compare(ref_out, out1, facts1, device, prob1)
        del out1
        info2: dict[str, Any] = {}
        res2 = res1
        if run.checks and k_trial < second_calls:
            ref_out = None  # computed again below: not held beside two live outputs and a handed-back one
            enc2, ids2 = sb.upload(pristine, run.left())
            msg = sb.request("call", run.left(), slot=slot, inputs=enc2, out_id="t2", against=["t1"])
            info2 = msg.body
            out2, facts2, prob2 = sb.outputs(msg)
            sb.free(ids2, run.left())
            sb.ask("release", run.left(), ids=["t1", "t2"], poison=run.checks, poison_below=poison_below(run))
            ref_out = reference_outputs(run, ref, pristine, reuse=False)
            del pristine
            res2 = judge.compare(ref_out, out2, facts2, device, prob2)
            del out2
        else:
            del pristine
            sb.ask("release", run.left(), ids=["t1", "t2"], poison=run.checks, poison_below=poison_below(run))
        res = res1 if not res1.passed else res2
        label = name if res.passed or not res1.passed else f"{name} (second call, after the reference)"
        v.add_trial(correctness.TrialResult(
            label, res.passed, res.check, res.detail, max(res1.max_abs_err or 0, res2.max_abs_err or 0),
            max(res1.max_rel_err or 0, res2.max_rel_err or 0)).as_dict())
        if changed:
            v.add_flag("input_mutation", f"the candidate modified input(s) {changed}; inputs are read-only")
        if info1.get("aliases_input") is True or info2.get("aliases_input") is True:
            v.add_flag("aliased_output", "an output shares memory with an input; return a new tensor")
        elif info2.get("aliases_earlier"):
            v.add_flag("aliased_output", "two calls returned tensors sharing memory (a reused or cached output "
                       "buffer); allocate a new output per call")
        threads_added += sum(int(i.get("threads_added") or 0) for i in (info1, info2))
        run.silent_calls += [name for i in (info1, info2) if i and i.get("launches") == 0]
        del ref_out
        free_cached(run)
        if not res.passed:
            v.fail_check(res.check)
            return False
    if threads_added > 0:
        # A warning only: an idle pool whose work is awaited inside forward() is honest; work finishing
        # after forward() returns is caught by the output checks (values, timed outputs, sabotage).
        v.add_flag("background_thread", f"the candidate left {threads_added} Python thread(s) running after "
                   "forward(); all work must finish inside forward()", rejects=False)
    return True


def check_repeats(run: Run, repeats: int = 8) -> bool:
    """Thorough tier: the same inputs many times, freed blocks poisoned in between. Every result must pass;
    results that are not bit-identical get a `nondeterministic` warning (cheat pattern 16)."""
    v, sb = run.verdict, run.sb
    pristine = inp.make_inputs(run.task, run.device, run.seed, "task")
    ref_out = reference_outputs(run, run.ref, pristine)
    first = None
    differ = False
    for k in range(repeats):
        enc, ids = sb.upload(pristine, run.left())
        msg = sb.request("call", run.left(), slot="main", inputs=enc, out_id="r")
        out, facts, prob = sb.outputs(msg)
        res = judge.compare(ref_out, out, facts, run.device, prob)
        sb.ask("release", run.left(), ids=["r"])
        sb.free(ids, run.left())
        if not res.passed:
            v.add_trial({"trial": f"repeat {k + 1} of the same inputs", "passed": False,
                         "failed_check": res.check, "detail": res.detail})
            v.fail_check(f"repeat:{res.check}")
            return False
        flat = [t for t in observe.flatten_outputs(out) if isinstance(t, torch.Tensor)]
        if first is None:
            first = flat
        elif not all(torch.equal(a, b) or (a.is_floating_point() and observe.same(a, b))
                     for a, b in zip(first, flat, strict=True)):
            differ = True
    v.add_trial({"trial": f"{repeats} repeats of the same inputs", "passed": True})
    if differ:
        v.add_flag("nondeterministic", "repeated calls on the same inputs gave results that are not bit-"
                 "identical (fine for atomics; a sign of reading uninitialised memory otherwise)", rejects=False)
    return True


# --------------------------------------------------------------------------------------------------------
# Phases


def phase_static(run: Run) -> bool:
    v, source = run.verdict, run.job["candidate_source"]
    problems = run.backend.static_problems(source)
    if problems:
        v.set_status("invalid_candidate", f"not a valid {run.backend.name} candidate: " + "; ".join(problems))
        return False
    for name, why in static.static_flags(source):
        v.add_flag(name, why)
    return True


def _baseline_inductor_dir(run: Run) -> str | None:
    """torch.compile's cache for the baselines' sandboxes, kept across evaluations (a cold inductor compile
    takes most of a minute on two cores). Only a baseline's sandbox, which runs the reference alone, may
    write it, and only where Landlock keeps every candidate's sandbox from writing it; otherwise each
    baseline compiles into its own scratch folder."""
    if run.job["mode"] != "baseline" or not run.job.get("landlock", True) or landlock.landlock_abi() < 1:
        return None
    folder = os.path.join(run.job["build_root"], "baseline-inductor")
    os.makedirs(folder, exist_ok=True)
    if run.sb.identity is not None:
        os.chown(folder, 0, run.sb.identity.gid)
        os.chmod(folder, 0o2775)
    return folder


def phase_compile(run: Run, calibrate_clock: bool = True) -> bool:
    """Import the candidate in the sandbox (its builds run there), after calibrating the checker's clock
    (`calibrate_clock=False` for the paired reference's sandbox: `judge.settle_pair` compares each side's
    requests with the other's at the same moments, and needs no no-op requests)."""
    v, job, sb = run.verdict, run.job, run.sb
    run.enter("compile")
    ready = sb.wait_ready(run.left())
    run.seconds["sandbox_imports"] = ready.get("imports_s") if isinstance(ready.get("imports_s"), float) else None
    # Shared builds are made here, by this process only (builder.py); the sandbox reads them, verified, and
    # builds anything else in a private folder inside its scratch, removed with it.
    builds = builder.BuildService(os.path.join(job["build_root"], "shared"))
    sb.on_event["build"] = lambda msg: builds.handle(msg.body, run.deadline)
    v.record(builds=builds.facts)  # name, key, cache (hit, built, private, failed), seconds: filled as they happen
    build_root = os.path.join(str(sb.scratch), "build")
    allowed = memory_allowance(run) if job["mode"] != "baseline" else None
    reply = sb.ask("prepare", run.left(), backend=job["backend"], build_root=build_root, threads=job.get("threads"),
                   fast_build=job.get("fast_build", True), device_index=job.get("device_index", 0), probe=True,
                   landlock=job.get("landlock", True), inductor_dir=_baseline_inductor_dir(run),
                   memory_allowance=allowed)
    v.record(sandbox={"user": sb.user_text, "confinement": str(reply.get("confinement"))[:300]})
    if allowed:
        how = ", ".join(h for h in (memory_cap.cap_cgroup(allowed, sb.cgroup.path if sb.cgroup is not None else None),
                                    str(reply.get("memory_cap") or "")[:200]) if h)
        run.memory_cap = {"allowed_bytes": allowed, "footprint_bytes": run.memory_cap_footprint, "how": how}
        v.record(memory_cap=run.memory_cap)
    if run.ref is None:
        run.ref, init = build_reference(run.task, run.device)
    else:  # the paired reference's sandbox: the checker's model is the candidate run's, not a second copy
        with torch.device(run.device):
            init = run.task.get_init_inputs()
    timed = job["mode"] in ("evaluate", "baseline") and job.get("timing", True)
    run.calibration = []
    if timed and calibrate_clock:  # before any code but ours runs there: a phase of its own
        if not phase_calibrate(run):
            return False
        run.enter("compile")
    t0 = time.perf_counter()
    step = "importing the candidate (its module's code and its builds)"
    try:
        if job["mode"] == "baseline":  # the reference itself, timed in a sandbox of its own like a candidate
            step = "loading the task's reference"
            sb.ask("reference", run.left(), source=job["task_source"], path=job["task_path"], size=job["size"],
                   derived=job.get("derived_sizes"))
        else:
            sb.ask("load", run.left(), source=job["candidate_source"])
        if job["mode"] in ("evaluate", "baseline"):
            step = (f"building {'Model' if job['mode'] == 'baseline' else 'ModelNew'}(*get_init_inputs()) with "
                    "the reference's weights (its module was imported and built)")
            build_candidate(run, "main", run.ref, init)
    except CandidateFailed as exc:
        v.set_compile(seconds=round(time.perf_counter() - t0, 3))
        if builds.environment_failure:  # the evaluator's build failed, not the candidate's source
            v.set_status("error", f"evaluator error while building: {builds.environment_failure[:300]}")
            v.set_compile(message=exc.text[-8000:])
        elif exc.kind == "out_of_memory":
            v.set_status("out_of_memory", f"out of memory while {step}: {exc.text[:300]}")
        else:
            v.set_status("compile_error")
            where = f"\n({exc.where})" if exc.where and "Error building extension" not in exc.text else ""
            v.set_compile(message=exc.text[-8000:] + where)
        return False
    v.set_compile(compiled=True, seconds=round(time.perf_counter() - t0, 3))
    v.record(build_seconds=round(sum(b.get("seconds", 0.0) for b in builds.facts), 3))
    if job["mode"] == "compile":
        v.set_status("accepted", "compiled")
        v.set_correct(None)
        return False
    return check_tampering(run)


def phase_calibrate(run: Run) -> bool:
    """The checker's clock calibrated on no-op requests (`timed_calls.calibrate`), before the candidate is
    imported. Its own phase, so that a failure here is named for what it is: only the evaluator's code has run
    in the sandbox yet, so whatever fails (an allocation of the no-op's outputs included) is the evaluator's
    `error`, never the candidate's `out_of_memory`, and never "during compile" (issue 36)."""
    run.enter("calibrate")
    try:
        run.calibration = calibrate(run)
        return True
    except CandidateFailed as exc:
        oom, text = exc.kind == "out_of_memory", exc.text
    except SandboxDied as exc:  # killed (the OOM killer sends SIGKILL) or dead with only our code in it
        group = run.sb.cgroup.path if run.sb.cgroup is not None else None
        oom, text = memory_cap.oom_kills(group) > 0 or "SIGKILL" in exc.reason, f"the sandbox died: {exc.reason}"
    what = HARNESS_OOM if oom else "evaluator error"
    run.verdict.set_status("error", f"{what} during calibrate, in the sandbox before the candidate was imported: "
                           f"{text[:300]}")
    run.verdict.set_error(text[-1500:])
    return False


def memory_allowance(run: Run) -> int | None:
    """What the candidate's sandbox may hold beyond what it holds before the candidate is imported, sized from the
    task's footprint (`containment.memory_cap`); None: no cap."""
    from ..tasks import footprint

    fp = footprint.try_measure(run.task)
    run.memory_cap_footprint = fp.total if fp is not None else None
    return memory_cap.allowance(run.memory_cap_footprint)


def check_tampering(run: Run) -> bool:
    changed = run.sb.ask("tamper", run.left()).get("changed") or []
    if changed:
        run.verdict.reject("timer_tampering",
                           f"the candidate replaced trusted functions: {', '.join(str(c) for c in changed[:5])}")
        return False
    return True


def phase_first_call(run: Run) -> bool:
    run.enter("first_call")  # NVRTC and Triton candidates compile here, at their first launch
    enc, ids = run.sb.upload(inp.make_inputs(run.task, run.device, run.seed, "task"), run.left())
    try:  # nothing is compared here, so nothing is handed back (a full-size copy the checker never read)
        run.sb.ask("call", run.left(), slot="main", inputs=enc, out_id="first", send=False)
    except CandidateFailed as exc:
        forward_failed(run.verdict, exc, "at the first call of forward")
        return False
    run.sb.ask("release", run.left(), ids=["first"])
    run.sb.free(ids, run.left())
    return True


def phase_trials(run: Run) -> bool:
    v = run.verdict
    v.record(tier=run.tier)
    run.enter("verify")
    try:
        ok = run_trials(run, run.task, run.ref, "main", inp.trial_plan(run.job.get("trials", 5), run.tier))
        if ok and run.tier == "thorough":
            ok = check_repeats(run)
    except CandidateFailed as exc:
        forward_failed(v, exc, "in forward")
        return False
    v.set_correct(ok)
    v.set_status("accepted" if ok else "incorrect")
    return ok


def phase_evidence(run: Run) -> bool:
    """What only the sandbox can observe: replaced functions, kernel launches, the forward's PyTorch ops."""
    if not check_tampering(run):
        return False
    probe = run.sb.ask("probe", run.left())
    calls = probe.get("calls") if isinstance(probe.get("calls"), dict) else {}
    launches = {str(k): int(n) for k, n in calls.items() if isinstance(n, int)}
    run.verdict.record(kernel_launches=launches)
    run.launches = sum(launches.values())
    if not run.checks:
        return True
    if run.launches == 0:
        run.verdict.add_flag("no_kernel_launched",
                 f"forward never launched a {run.backend.name} kernel of its own (no call into its compiled "
                 "extension, NVRTC kernel or Triton kernel); the computation must run in the candidate's kernel")
    elif run.silent_calls:  # instrumentation covers every compared call, not only the instrumented ones
        run.verdict.add_flag("no_kernel_launched",
                 f"forward launched no {run.backend.name} kernel of its own in {len(run.silent_calls)} compared "
                 f"call(s) ({', '.join(run.silent_calls[:3])}) while it did in others: every call must compute "
                 "with the candidate's kernel, not only the calls it can tell are inspected")
    run.enter("check_ops")
    inputs = inp.make_inputs(run.task, run.device, run.seed, "task")
    enc, ids = run.sb.upload(inputs, run.left())
    with torch.no_grad():  # on the inputs themselves (not read again): no full-size clone on either side
        ref_ops = observe.compute_ops(observe.aten_ops(lambda: run.ref(*inputs)))
    inputs.clear()
    reply = run.sb.ask("ops", run.left(), slot="main", inputs=enc)
    run.sb.free(ids, run.left())
    cand_ops = {(str(o[0]), str(o[1])) for o in reply.get("ops", []) if isinstance(o, list) and len(o) == 2}
    run.verdict.record(aten_ops={"reference": sorted({n for n, _ in ref_ops}),
                                 "candidate": sorted({n for n, _ in cand_ops})})
    if ref_ops and ref_ops <= cand_ops:
        names = ", ".join(sorted({n for n, _ in ref_ops})[:4])
        run.verdict.add_flag("reference_ops",
                 f"forward runs all of the reference's own PyTorch compute ops on the same shapes ({names}); "
                 "PyTorch may do part of the work, but the candidate's kernel must compute the result")
    return not run.rejected()


def pairs(job: dict[str, Any]) -> bool:
    """Whether the candidate's timing is interleaved with the reference's (the job's `paired_eager`)."""
    return (bool(job.get("paired_eager")) and job["mode"] == "evaluate" and job.get("timing", True)
            and "eager" in (job.get("baselines") or ()))


def reference_run(run: Run) -> Run | None:
    """The reference, loaded in its own sandbox (started with the job, so its imports overlapped the
    candidate's build), for the paired timing; None if the job does not pair, or if that sandbox failed
    (then the verdict says so, and the parent judges the candidate again against an eager baseline measured
    on its own). Not calibrated: the
    paired estimator (`judge.settle_pair`) takes each side's in-process median and compares what the two
    sides' requests took beyond their calls, request by request, so 25 no-op requests would be spent for
    nothing (0.4-0.7 s with their flushes on the 2-core VM)."""
    if run.ref_sandbox is None:
        return None
    if run.ref_run is not None:
        return run.ref_run
    job = {**run.job, "mode": "baseline", "baselines": [], "keep_scratch": False}
    sub = Run(job=job, verdict=VerdictBuilder(job.get("task_name", ""), job["backend"]), events=Events(None),
              sandbox=run.ref_sandbox, backend=run.backend, device=run.device, task=run.task, seed=run.seed,
              ref=run.ref)
    why = ""
    try:
        if not phase_compile(sub, calibrate_clock=False):
            why = str(sub.verdict.get("reason") or sub.verdict.get("compiler_message") or sub.verdict.status)
    except Exception as exc:  # only the task's reference runs there: any failure is ours, and is not fatal
        why = f"{type(exc).__name__}: {exc}"
    if why:
        run.verdict.warn(f"the eager baseline could not be timed beside the candidate ({why[:300]}); it is "
                         "measured on its own")
        run.ref_sandbox.discard()  # alone: `kill` would take the candidate's sandbox with it
        run.ref_sandbox = None
        return None
    run.ref_run = sub
    return sub


Timings = tuple[dict[str, Any], list[tuple[str, str]], judge.WallClock]


def _take_timing(run: Run, plan: timing.TimingPlan, first: bool) -> tuple[Timings, Timings | None]:
    """The candidate's timing, and the reference's taken beside it when the job pairs them."""
    more = {"n_snapshots": 8 if run.tier == "thorough" else 1, "every_set": run.tier == "thorough"} if first else {}
    ref_run = reference_run(run)
    if ref_run is None:
        return time_candidate(run, plan, recheck=run.checks, calibration=run.calibration, **more), None
    return time_paired(run, ref_run, plan, recheck=run.checks, **more)


def _unsteadiness(taken: tuple[Timings, Timings | None]) -> float:
    """What decides a second timing, and which of two is kept: alone, the candidate's spread (IQR /
    median, %); paired, the standard error of the ratio of the two medians (%), which is what the
    speedup rests on (`judge.UNSTEADY_PAIR_PCT` says why)."""
    (stats, _, _), ref = taken
    return stats["spread_pct"] if ref is None else judge.pair_error_pct(stats, ref[0])


def _unsteady(taken: tuple[Timings, Timings | None], device_type: str) -> bool:
    (stats, _, _), ref = taken
    return judge.unreliable(stats, device_type) if ref is None else judge.unsteady_pair(stats, ref[0])


def phase_timing(run: Run) -> bool:
    if not run.job.get("timing", True):
        return True
    run.enter("time")
    run.sb.release_spare(run.left())  # the timed sets are made apart: their re-checks need the room (timed_over)
    run.sb.ask("empty_cache", run.left())
    plan = timing.TimingPlan(**run.job.get("timing_plan", {}))
    taken = _take_timing(run, plan, first=True)
    (stats, problems, wall), ref = taken
    clock = wall.findings(run.device.type)
    if clock or _unsteady(taken, run.device.type):
        # Once more before believing the clock or the spread: a busy machine delays a round trip now and
        # then, a forged timer or deferred work every time. Findings must recur; the steadier timing counts
        # (a candidate's and its paired reference's stay together: they saw the same machine).
        again = _take_timing(run, plan, first=False)
        problems += again[0][1]
        recurring = {name for name, _ in again[0][2].findings(run.device.type)}
        clock = [(name, reason) for name, reason in clock if name in recurring]
        if _unsteadiness(again) < _unsteadiness(taken):
            taken = again
        (stats, _, wall), ref = taken
        if _unsteady(taken, run.device.type):
            if ref is None:
                judge.flag_unreliable(run.verdict, "the candidate", stats)
            else:
                judge.flag_unsteady_pair(run.verdict, stats, ref[0])
    timed_over(run)
    wall.judge(run.verdict, run.device.type, findings=clock)
    run.verdict.set_timing("candidate", stats)
    if ref is not None:
        run.verdict.set_timing("eager", dict(ref[0], paired=True, wall_clock=ref[2].record()))
    seen: set[str] = set()
    for flag, detail in problems:
        if flag in seen:
            continue
        seen.add(flag)
        if flag == "timed_output_mismatch":
            run.verdict.add_flag(flag, f"an output of a timed call was wrong ({detail}); results must not depend "
                                 "on call history (timed inputs change a few elements between calls)")
        else:
            run.verdict.add_flag(flag, f"work continued after forward returned ({detail}); all work must finish "
                                 "inside forward (join threads before returning)")
    return run.checks and check_tampering(run)


def timed_over(run: Run) -> None:
    """Nothing more is timed: the flush's buffer and the paired reference's sandbox go now rather than with
    the verdict (the untimed phases after this have no use for them; issue 36)."""
    run.backend.release_flush()
    if run.ref_sandbox is not None:
        run.account()  # its CPU, before it goes
        run.ref_sandbox.discard()  # alone: `kill` would take the candidate's sandbox with it
        run.ref_sandbox, run.ref_run = None, None
    run.sb.reuse_inputs = run.job["mode"] == "evaluate"  # the sabotage's inputs refilled by the next variants'


def phase_roofline(run: Run) -> bool:
    v = run.verdict
    cand_ms = (v.timing("candidate") or {}).get("median_ms")
    if not cand_ms:
        return True
    run.enter("roofline")
    counted = roofline.count_meta(run.task)
    if counted is None:  # a reference the meta device cannot run: counted on the real inputs
        inputs = inp.make_inputs(run.task, run.device, run.seed, "task")
        counted = roofline.count(run.ref, inputs)
        del inputs
    nbytes, flops = counted
    ceil = roofline.ceilings(run.device, v.get("device")["name"], run.job["build_root"])
    with torch.device("meta"):
        torch.manual_seed(run.seed)
        fp32 = all(t.dtype == torch.float32 for t in run.task.get_inputs()
                   if isinstance(t, torch.Tensor) and t.is_floating_point())
    floor, bound = roofline.floor_ms(nbytes, flops, ceil, fp32)
    slack = roofline.SLACK["cuda" if run.device.type == "cuda" else "cpu"]
    accused = cand_ms < floor * slack
    if accused or floor > 0.9 * cand_ms:
        # Before accusing, or before the agent stops "at the roofline": were the cached ceilings measured on
        # a busy machine? (a refresh keeps the best of old and new, so ceilings only rise). Always before a
        # rejection; at most hourly for a candidate that only comes near the floor (the probe's 256 MiB)
        ceil = roofline.ceilings(run.device, v.get("device")["name"], run.job["build_root"], refresh=True,
                                 max_age_s=None if accused else roofline.REFRESH_AFTER_S)
        floor, bound = roofline.floor_ms(nbytes, flops, ceil, fp32)
    frac = floor / cand_ms if cand_ms > 0 else None
    v.record(roofline={"bytes": nbytes, "flops": flops, "floor_ms": round(floor, 6), "bound": bound,
                     "fraction": round(frac, 4) if frac is not None else None,
                     "bandwidth_GBps": round(ceil["bandwidth_Bps"] / 1e9, 1),
                       "fp32_tflops": round(ceil["fp32_flops"] / 1e12, 2)})
    if frac is not None and cand_ms < floor * slack:
        v.add_flag("faster_than_roofline",
                 f"{cand_ms:.4f} ms is below the {bound} floor of {floor:.4f} ms for {nbytes / 1e6:.1f} MB and "
                 f"{flops / 1e9:.2f} GFLOP on this device: not physically possible, so not believed")
    return True


def _sabotage_inputs(run: Run) -> tuple[list[Any], Any, bool]:
    """Inputs on which the sabotage can tell: signed normal values where the reference stays finite (on
    [0, 1) ReLU, clamps and friends are the identity, and a kernel replaced by a copy of its input would
    look unused), else the task's own. Also: can the identity sabotage tell at all (no output equals an
    input of the same shape)?"""
    for dist in ("normal", "task"):
        inputs = inp.make_inputs(run.task, run.device, run.seed + 21, dist)
        ref_out = reference_outputs(run, run.ref, inputs)
        if finite(ref_out) or dist == "task":
            break
    outs = [o for o in observe.flatten_outputs(ref_out) if isinstance(o, torch.Tensor) and o.is_floating_point()]
    same_as_input = any(
        o.shape == x.shape and o.dtype == x.dtype and correctness.compare_tensor(o, x, run.device, quick=True).passed
        for o in outs for x in inputs if isinstance(x, torch.Tensor))
    return inputs, ref_out, not same_as_input


def phase_sabotage(run: Run) -> bool:
    """Every output must change when the kernels' results are discarded (NaN) or the kernels turned into
    copies of their inputs (identity); each sabotaged call gets the very tensors of a normal call just
    before, so a cache keyed on them would answer it."""
    if run.launches == 0 or run.rejected() or not run.checks:
        return True
    run.enter("sabotage")
    inputs, ref_out, identity_sound = _sabotage_inputs(run)
    enc, ids = run.sb.upload(inputs, run.left())
    del inputs  # the sandbox's buffers hold them; the checker keeps only the reference's outputs
    try:
        for mode in ("nan", "identity"):
            if mode == "identity" and not identity_sound:
                run.verdict.add_flag("sabotage_skipped", "the reference returns its input unchanged on every "
                         "input distribution tried, so replacing a kernel by a copy of its input cannot show "
                         "whether it was used (a task-level limit, not the candidate's fault)", rejects=False)
                continue
            try:
                msg = run.sb.request("sabotage", run.left(), slot="main", inputs=enc, mode=mode, out_id="sab")
                raised = msg.body.get("raised")
            except CandidateFailed as exc:
                msg, raised = None, exc.text[:120]
            if raised is not None:  # an exception shows nothing: a forward that spots the sabotage can raise
                if msg is not None:
                    protocol._close_all(msg.fds)
                run.verdict.add_flag("kernel_use_not_shown",
                         f"forward raised ({str(raised)[:120]}) when its kernels' results were "
                         f"{judge.SABOTAGE_DONE[mode]}, so the evaluator could not show that the kernels compute "
                         "the output; a kernel fed such values must still return (NaN in, NaN out), not raise")
                return False
            if mode == "identity" and msg.body.get("replaced") == 0:
                protocol._close_all(msg.fds)
                continue  # no launch had an input shaped like its result: a copy cannot be what it does
            out, facts, prob = run.sb.outputs(msg)
            untouched = [] if prob else judge.untouched_outputs(ref_out, out, run.device)
            run.sb.ask("release", run.left(), ids=["sab"], poison=False)
            if untouched:
                run.verdict.add_flag("kernel_not_used", f"output {untouched} {judge.SABOTAGE_WHY[mode]}")
                return False
    finally:
        run.sb.free(ids, run.left())
    return True


def phase_other_init(run: Run) -> bool:
    """One trial with other init arguments (every float scaled by 1.37), when the reference accepts them:
    constants baked in from get_init_inputs() are wrong here (cheat pattern 12)."""
    if run.rejected() or not run.checks:
        return True
    run.sb.ask("drop_slot", run.left(), slot="main")
    run.ref = None
    gc.collect()
    init = inp.other_init(list(run.task.get_init_inputs()))
    if init is None:
        return True
    run.enter("verify_other_init")
    v = run.verdict
    try:  # the reference must be buildable and finite with them; otherwise the task does not allow it
        ref, init = build_reference(run.task, run.device, init)
        if not finite(reference_outputs(run, ref, inp.make_inputs(run.task, run.device, run.seed + 9, "task"),
                                        reuse=False)):
            raise ValueError("reference not finite")
    except Exception as exc:
        v.add_trial({"trial": "other init arguments", "passed": True,
                     "skipped": f"the reference does not accept them ({type(exc).__name__})"})
        return True
    return _variant(run, run.task, ref, init, "init2", "other_init", [("other init arguments (floats x1.37)", "task", 9)],
                    {"init": repr(init)[:200]})


def phase_other_shape(run: Run) -> bool:
    """The second shape (pattern 12): a kernel hard-wired to the first shape fails here."""
    alt_size, size = run.job.get("alt_size"), run.job["size"]
    if run.rejected() or not run.checks or not alt_size or alt_size == size or alt_size not in run.task.sizes:
        return True
    run.enter("verify_other_shape")
    alt = run.task.at_size(alt_size)
    ref, init = build_reference(alt, run.device)
    return _variant(run, alt, ref, init, "alt", "other_shape",
                    [("other shape (alt size)", "task", 7), ("other shape, normal", "normal", 8)], {"size": alt_size})


def _variant(run: Run, task: Any, ref: Any, init: list[Any], slot: str, label: str,
             trials: list[tuple[str, str, int]], tag: dict[str, Any]) -> bool:
    v = run.verdict
    n_before = v.trial_count()
    try:
        build_candidate(run, slot, ref, init)
        ok = run_trials(run, task, ref, slot, trials, second_calls=0)
    except CandidateFailed as exc:
        forward_failed(v, exc, f"in forward ({label.replace('_', ' ')})")
        return False
    finally:
        run.sb.ask("drop_slot", run.left(), slot=slot)
    v.tag_trials(n_before, tag)
    if not ok:
        v.fail_check(f"{label}:{v.get('failed_check')}")
        v.set_correct(False)
        v.set_status("incorrect")
    return ok


PHASES: tuple[Callable[[Run], bool], ...] = (
    phase_static, phase_compile, phase_first_call, phase_trials, phase_evidence, phase_timing, phase_roofline,
    phase_sabotage, phase_other_init, phase_other_shape,
)


def evaluate(run: Run) -> None:
    """The phases in order. Input buffers of one shape are refilled rather than made again (`SandboxClient.upload`
    says why that is safe), except while timing, which makes its own and needs the room for its re-checks."""
    if run.sandbox is not None:
        run.sb.reuse_inputs = True
    for phase in PHASES:
        if not phase(run):
            break
    if run.checks and run.verdict.status == "accepted":
        check_tampering(run)


def bare(run: Run) -> None:
    """The bare tier: trials and plain timing (a baseline to measure the checks' cost, never for the agent)."""
    for phase in (phase_static, phase_compile, phase_first_call, phase_trials):
        if not phase(run):
            return
    probe = run.sb.ask("probe", run.left())
    run.verdict.record(kernel_launches=probe.get("calls") if isinstance(probe.get("calls"), dict) else {})
    phase_timing(run)


def _time_slot(run: Run, what: str, slot: str) -> dict[str, Any]:
    """A baseline's timing, by the candidate's protocol (time_candidate) on a slot holding the reference;
    re-taken once when its spread is too wide, the steadier one kept."""
    plan = timing.TimingPlan(**run.job.get("timing_plan", {}))
    stats, _, wall = time_candidate(run, plan, recheck=False, calibration=run.calibration, slot=slot)
    if judge.unreliable(stats, run.device.type):
        again, _, wall_again = time_candidate(run, plan, recheck=False, calibration=run.calibration, slot=slot)
        if again["spread_pct"] < stats["spread_pct"]:
            stats, wall = again, wall_again
        if judge.unreliable(stats, run.device.type):
            judge.flag_unreliable(run.verdict, what, stats)
    return dict(judge.baseline_record(stats), wall_clock=wall.record())


def baseline(run: Run) -> None:
    """Eager and torch.compile timings of the reference (those of the job's `baselines`). The reference runs in a sandbox of its own (no
    candidate is ever loaded there), under exactly the protocol a candidate is timed by: same requests,
    same flush, same hand-over of outputs, same clock of record."""
    v, job = run.verdict, run.job
    if not phase_compile(run):
        v.set_status("error", "evaluator error: the reference could not be loaded for timing: "
                     f"{(v.get('reason') or v.get('compiler_message'))[:300]}")
        return
    run.enter("baseline")
    if "eager" in job.get("baselines", ()):
        v.set_timing("eager", _time_slot(run, "eager PyTorch", "main"))
    run.backend.release_flush()  # not held through torch.compile's compile (the compiled timing makes it again)
    if "compile" in job.get("baselines", ()):
        run.enter("baseline_compile")
        enc, ids = run.sb.upload(inp.make_inputs(run.task, run.device, run.seed + 100, "task"), run.left())
        try:
            run.sb.ask("compile_slot", run.left(), slot="main", compiled_slot="compiled", inputs=enc)
            v.set_timing("compile", _time_slot(run, "torch.compile", "compiled"))
            run.sb.free(ids, run.left())
        except CandidateFailed as exc:  # torch.compile failing is a fact about the baseline, not an error
            v.set_timing("compile", {"error": exc.text[-500:]})
        except SandboxTimeout:  # the last step: the eager timing stands, the sandbox goes with the job
            v.set_timing("compile", {"error": f"torch.compile took longer than {run.job.get('compile_timeout_s', 600)} s"})
    v.set_status("accepted", "baseline timings")
    v.set_correct(True)


__all__ = ["PHASES", "bare", "baseline", "build_candidate", "build_reference", "evaluate"]
