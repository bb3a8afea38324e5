"""The worker: one process per candidate (or per baseline), JSON job in, JSON verdict out.

    python -m htam_agent.evaluation.worker JOB.json

It imports only torch, numpy and the standard library. The parent (`runner.py`) enforces the wall-clock
limits and turns a dead worker (signal, `exit()`, hang) into a verdict; everything this process can still
say about itself, it writes to the result file. Phases are announced in a small file so that a timeout can
say where the candidate hung.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
import traceback
from typing import Any

_T_START = time.perf_counter()
# Trusted references, taken before any candidate code runs (cheat pattern 6: timer tampering).
import torch  # noqa: E402

# Modules the checks use later patch torch when first imported (dynamo wraps torch.manual_seed): import
# them up front (in a pre-started worker this is hidden) so their changes are trusted state, not tampering.
import torch._dynamo  # noqa: E402, F401
import torch.profiler  # noqa: E402, F401
import torch.utils.flop_counter  # noqa: E402, F401

from . import anticheat, correctness, roofline, timing  # noqa: E402
from .backends import get_backend  # noqa: E402
from .tasks import TaskError, load_task_source, validate_inputs  # noqa: E402
from .verdict import add_flag, finalize, new_verdict  # noqa: E402

_T_IMPORTED = time.perf_counter()


def _trusted_objects() -> dict[str, Any]:
    """Every public torch function and Tensor method, the clocks, and the evaluator's own functions."""
    objs: dict[str, Any] = {
        "time.perf_counter": time.perf_counter,
        "time.perf_counter_ns": time.perf_counter_ns,
        "time.time": time.time,
        "torch.cuda.synchronize": torch.cuda.synchronize,
        "torch.cuda.Event": torch.cuda.Event,
        "torch.cuda.Event.record": torch.cuda.Event.record,
        "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
        "torch.cuda.Event.synchronize": torch.cuda.Event.synchronize,
        "torch.isfinite": torch.isfinite,
        "torch.where": torch.where,
        "torch.equal": torch.equal,
        "torch.Tensor.double": torch.Tensor.double,
        "torch.Tensor.abs": torch.Tensor.abs,
        "torch.Tensor.max": torch.Tensor.max,
        "torch.Tensor.clone": torch.Tensor.clone,
        "json.dump": json.dump,
        "json.dumps": json.dumps,
        "os.replace": os.replace,
    }
    for owner, prefix in ((torch, "torch"), (torch.Tensor, "torch.Tensor"), (torch.cuda, "torch.cuda"),
                          (time, "time")):
        for name in dir(owner):
            if name.startswith("__") or (owner is torch.cuda and name == "_compile_kernel"):
                continue
            try:
                obj = getattr(owner, name)
            except Exception:  # lazy attributes that fail to resolve are not ours to guard
                continue
            if callable(obj) and not isinstance(obj, type):
                objs[f"{prefix}.{name}"] = obj
    # Operators and protocol methods of Tensor (`__gt__`, `__sub__`, `__torch_function__`, ...): the raw
    # class attributes, whose identity is stable (getattr would make a new bound object for classmethods).
    for name in dir(torch.Tensor):
        if not name.startswith("__"):
            continue
        for cls in torch.Tensor.__mro__:
            if cls is object:
                break
            if name in cls.__dict__:
                raw = cls.__dict__[name]
                if (callable(raw) or isinstance(raw, (classmethod, staticmethod))) and not isinstance(raw, type):
                    objs[f"torch.Tensor.{name}"] = raw
                break
    import statistics

    from .backends import _devices

    for name in dir(statistics):
        obj = getattr(statistics, name)
        if callable(obj) and not name.startswith("_") and not isinstance(obj, type):
            objs[f"statistics.{name}"] = obj
    for cls in (_devices.CudaTimer, _devices.CpuTimer, _devices.CudaDevice, _devices.CpuDevice,
                timing.TimingStats):
        for name, obj in vars(cls).items():
            if callable(obj):
                objs[f"{cls.__module__}.{cls.__name__}.{name}"] = obj
    from . import verdict as verdict_mod

    for name, obj in list(globals().items()):  # every name this module calls (it may run as __main__)
        if callable(obj) and not name.startswith("__"):
            objs[f"worker.{name}"] = obj
    for mod in (correctness, timing, roofline, anticheat, verdict_mod):
        for name, obj in vars(mod).items():
            if callable(obj) and getattr(obj, "__module__", None) == mod.__name__:
                objs[f"{mod.__name__}.{name}"] = obj
    return objs


def _snapshot(objs: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    return {k: (v, getattr(v, "__code__", None)) for k, v in objs.items()}


_SNAPSHOT: dict[str, tuple[Any, Any]] = {}


def take_snapshot() -> None:
    """Called after the evaluator's own set-up and before the candidate is imported."""
    _SNAPSHOT.clear()
    _SNAPSHOT.update(_snapshot(_trusted_objects()))
    _DATA.clear()
    _DATA.update(_trusted_data())


_DATA: dict[str, Any] = {}


def _trusted_data() -> dict[str, Any]:
    """Module data the checks read (tolerances, slack): compared by value."""
    return {"correctness.TOLERANCE": dict(correctness.TOLERANCE), "roofline.SLACK": dict(roofline.SLACK),
            "anticheat.TRIVIAL_OPS": anticheat.TRIVIAL_OPS}


def tampered() -> list[str]:
    """Names of trusted timing/checking functions (or data) the candidate replaced or rewrote."""
    now = _snapshot(_trusted_objects())
    changed = [k for k, (obj, code) in _SNAPSHOT.items()
               if k not in now or now[k][0] is not obj or now[k][1] is not code]
    return changed + [k for k, v in _trusted_data().items() if _DATA.get(k) != v]


class Phases:
    """Announce the current phase in a file the parent reads (the parent enforces per-phase limits)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.name = "start"
        self.t0 = self._last = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def enter(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[self.name] = round(self.seconds.get(self.name, 0.0) + now - self._last, 3)
        self._last = now
        self.name = name
        if self.path:
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                f.write(json.dumps({"phase": name, "since": time.time()}))
            os.replace(tmp, self.path)


# --------------------------------------------------------------------------------------------------------
# Inputs


DISTRIBUTIONS = ("task", "normal", "signed_uniform", "large", "ties", "shifted")
TIERS = ("bare", "default", "thorough")
SHIFT_STDS = 16.0  # the shifted trial adds 16 standard deviations: E[x^2] - E[x]^2 in fp32 breaks, two passes do not


def make_inputs(task: Any, device: Any, seed: int, dist: str) -> list[Any]:
    """Seeded inputs drawn on the device; floating tensors re-drawn from another distribution if asked.

    `ties`: small multiples of 0.5 (many equal values: the tie rule of arg-reductions, as torch: first index);
    `shifted`: the task's inputs plus 16 of their standard deviations (a large mean next to a small spread).
    """
    torch.manual_seed(seed)
    with torch.device(device):
        inputs = validate_inputs(task.get_inputs(), task.path)
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            x = x.to(device)
            if x.is_floating_point() and dist != "task":
                if dist == "normal":
                    x = torch.randn_like(x)
                elif dist == "signed_uniform":
                    x = torch.rand_like(x) * 2 - 1
                elif dist == "large":
                    x = x * 64.0
                elif dist == "ties":
                    x = torch.randint_like(x, -4, 5) * 0.5
                elif dist == "shifted":
                    std = float(x.float().std()) if x.numel() > 1 else 0.0
                    x = x + SHIFT_STDS * (std if std > 0 and std == std and std != float("inf") else 1.0)
        out.append(x)
    return out


def perturb_inputs(inputs: list[Any], gen: Any, k: int = 4) -> None:
    """Change k scattered elements of every floating input in place, each to the value at another random
    position (the values stay in the task's domain). Written through `.data`: the tensor keeps its address
    and version counter, so only its content tells the candidate it changed (a cache keyed on address,
    version, shape or a sample of the values returns a stale result)."""
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() > 1:
            pos = torch.randint(0, x.numel(), (2, k), generator=gen).to(x.device)
            d = x.data
            d[torch.unravel_index(pos[0], x.shape)] = d[torch.unravel_index(pos[1], x.shape)]


def clone_inputs(inputs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def inputs_unchanged(pristine: list[Any], used: list[Any]) -> list[int]:
    """Indices of tensor inputs the call modified (NaN-aware bitwise comparison)."""
    changed = []
    for i, (a, b) in enumerate(zip(pristine, used, strict=True)):
        if isinstance(a, torch.Tensor):
            same = a.shape == b.shape and (torch.equal(a, b) or (a.is_floating_point() and bool(
                ((a == b) | (torch.isnan(a) & torch.isnan(b))).all())))
            if not same:
                changed.append(i)
    return changed


def _storages(values: list[Any]) -> list[tuple[int, int]]:
    spans = []
    for t in correctness.flatten_outputs(values):
        if isinstance(t, torch.Tensor) and t.numel() > 0:
            st = t.untyped_storage()
            spans.append((st.data_ptr(), st.data_ptr() + st.nbytes()))
    return spans


def aliases(outputs: Any, others: list[Any]) -> bool:
    """Does any output tensor share memory with any of `others` (inputs, earlier outputs)?"""
    out_spans = _storages(correctness.flatten_outputs(outputs))
    other_spans = _storages(others)
    return any(a0 < b1 and b0 < a1 for a0, a1 in out_spans for b0, b1 in other_spans)


def poison_freed(nbytes: list[int], device: Any) -> None:
    """Fill blocks the size of freed outputs with NaN, so an output allocated but never written shows it."""
    for n in nbytes:
        if n >= 4:
            t = torch.full((n // 4,), float("nan"), dtype=torch.float32, device=device)
            del t


def output_nbytes(out: Any) -> list[int]:
    return [t.untyped_storage().nbytes() for t in correctness.flatten_outputs(out) if isinstance(t, torch.Tensor)]


# --------------------------------------------------------------------------------------------------------
# Phases of an evaluation


def import_candidate(source: str, scratch: str) -> Any:
    import importlib.util

    path = os.path.join(scratch, "candidate.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("htam_candidate", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["htam_candidate"] = module
    spec.loader.exec_module(module)
    return module


def build_models(task: Any, cand_cls: Any, device: Any, seed: int = 0, init: list[Any] | None = None) -> tuple[Any, Any]:
    with torch.device(device):
        init = task.get_init_inputs() if init is None else init
        torch.manual_seed(seed)
        ref = task.model_cls(*init).to(device)
        torch.manual_seed(seed)
        cand = cand_cls(*init).to(device) if cand_cls is not None else None
    if cand is not None:
        rs, cs = ref.state_dict(), cand.state_dict()
        if rs and rs.keys() == cs.keys() and all(rs[k].shape == cs[k].shape for k in rs):
            cand.load_state_dict(rs)
    return ref, cand


def other_init(init: list[Any], factor: float = 1.37) -> list[Any] | None:
    """The init arguments with every non-zero float scaled by `factor` (order and signs kept: lo < hi stays
    so); None when there is no such float. Integers are left alone: they are usually shapes."""
    changed = False

    def f(v: Any) -> Any:
        nonlocal changed
        if type(v) is float and v != 0.0 and v == v:
            changed = True
            return v * factor
        if isinstance(v, (list, tuple)):
            return type(v)(f(x) for x in v)
        return v

    new = [f(v) for v in init]
    return new if changed else None


def run_trials(task: Any, ref: Any, cand: Any, backend: Any, device: Any, verdict: dict[str, Any],
               trials: list[tuple[str, str, int]], checks: bool = True, second_calls: int = 1) -> bool:
    """Correctness trials; returns True when all ran and passed. Rejecting flags are added to the verdict.

    The first `second_calls` trials call the candidate a second time after the reference (cheat pattern 1);
    the others once. checks=False (the `bare` tier, a measurement baseline only): one call per trial, no
    poisoned frees.
    """
    threads_before = threading.active_count()
    for k_trial, (name, dist, seed) in enumerate(trials):
        inputs = make_inputs(task, device, seed, dist)
        pristine = clone_inputs(inputs)

        c_in = clone_inputs(inputs)
        with torch.no_grad():
            out1 = cand(*c_in)
        backend.synchronize()
        changed = inputs_unchanged(pristine, c_in)

        r_in = clone_inputs(inputs)
        with torch.no_grad():
            ref_out = ref(*r_in)
        backend.synchronize()
        ref_finite = all(bool(torch.isfinite(t).all()) for t in correctness.flatten_outputs(ref_out)
                         if isinstance(t, torch.Tensor) and t.is_floating_point())
        if not ref_finite and dist != "task":
            verdict["trials"].append({"trial": name, "passed": True, "skipped": "reference not finite on these inputs"})
            del inputs, pristine, c_in, r_in, out1, ref_out
            continue
        if name == trials[0][0]:
            trivial = correctness.trivial_answers_pass(ref_out)
            if trivial:
                add_flag(verdict, "degenerate_task",
                         f"trivial outputs ({', '.join(trivial)}) also pass this task's tolerance; its speedups "
                         "say little", rejects=False)

        res1 = correctness.compare_outputs(ref_out, out1, device)
        c_in2: list[Any] = []
        if checks and k_trial < second_calls:
            c_in2 = clone_inputs(inputs)
            with torch.no_grad():
                out2 = cand(*c_in2)  # after the reference, whose outputs stay alive (cheat pattern 1)
            backend.synchronize()
            res2 = correctness.compare_outputs(ref_out, out2, device)
        else:
            out2, res2 = None, res1
        res = res1 if not res1.passed else res2
        label = name if not res1.passed else f"{name} (second call, after the reference)"
        trial = correctness.TrialResult(label if not res.passed else name, res.passed, res.check, res.detail,
                                        max(res1.max_abs_err or 0, res2.max_abs_err or 0),
                                        max(res1.max_rel_err or 0, res2.max_rel_err or 0))
        verdict["trials"].append(trial.as_dict())

        if changed:
            add_flag(verdict, "input_mutation", f"the candidate modified input(s) {changed}; inputs are read-only")
        if aliases(out1, c_in) or aliases(out2, c_in2):
            add_flag(verdict, "aliased_output", "an output shares memory with an input; return a new tensor")
        elif out2 is not None and aliases(out2, [out1]):
            add_flag(verdict, "aliased_output",
                     "two calls returned tensors sharing memory (a reused or cached output buffer); "
                     "allocate a new output per call")
        sizes = output_nbytes(ref_out) + output_nbytes(out1)
        passed = res.passed
        del inputs, pristine, c_in, c_in2, r_in, out1, out2, ref_out  # refcounts free them: no gc pass
        if checks:
            poison_freed(sizes, device)
        if not passed:
            verdict["failed_check"] = res.check
            return False
    if threading.active_count() > threads_before:
        # A warning only: an idle pool whose work is awaited inside forward() is honest; work finishing
        # after forward() returns is caught by the output checks (values, timed outputs, sabotage).
        add_flag(verdict, "background_thread",
                 f"the candidate left {threading.active_count() - threads_before} Python thread(s) running "
                 "after forward(); all work must finish inside forward()", rejects=False)
    return True


def _fits_sets(inputs: list[Any], device: Any, n_sets: int) -> int:
    """How many distinct input sets to rotate through while timing (fresh inputs, cheat pattern 8)."""
    if device.type != "cuda":
        return n_sets
    need = sum(x.untyped_storage().nbytes() for x in inputs if isinstance(x, torch.Tensor))
    free, _ = torch.cuda.mem_get_info()
    return max(1, min(n_sets, int(free * 0.4 // max(need, 1))))


def time_model(model: Any, task: Any, backend: Any, device: Any, plan: timing.TimingPlan,
               n_sets: int = 3, recheck_ref: Any = None, vary: bool = True,
               n_snapshots: int = 1, every_set: bool = False) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Time `model` on rotating seeded input sets; if `recheck_ref` is given, re-check the timed outputs.

    vary=True: before each call (outside the timed window) a few scattered elements of the set's inputs
    change in place (`perturb_inputs`), so no two calls see the same input: a cache keyed on anything but
    the whole content replays a stale result, which the re-check sees (cheat patterns 8 and 17).
    With `recheck_ref`: the last call (on each set with every_set) and `n_snapshots` random earlier calls
    are re-checked,
    each output both as it was right after its end stamp (a copy taken then) and as it is afterwards; a
    Python thread started inside a timed call that was still running when the call returned and ended
    later is recorded too (work after return, pattern 9). Problems come back as (flag, detail).
    """
    first = make_inputs(task, device, 100, "task")
    n = _fits_sets(first, device, n_sets)
    sets = [first] + [make_inputs(task, device, 100 + i, "task") for i in range(1, n)]
    gen = torch.Generator().manual_seed(20261129)
    chosen: dict[int, list[Any] | None] = {}  # timed call -> its inputs (None: the set as it ends up)
    outs: dict[int, tuple[Any, Any]] = {}  # timed call -> (output object, copy taken at return)
    threads_before: set[Any] = set()
    outliving: list[Any] = []  # threads started in a call and alive when it returned

    def before(i: int, reps: int | None) -> None:
        if vary:
            perturb_inputs(sets[i % n], gen)
        if recheck_ref is None or reps is None:
            return
        if i == 0:
            last = n if every_set else 1
            k = min(n_snapshots, _fits_sets(first, device, n_snapshots), max(0, reps - last))
            picks = torch.randperm(max(reps - last, 1), generator=gen)[:k].tolist() if k else []
            chosen.update({j: [] for j in picks})
            chosen.update({j: None for j in range(max(0, reps - last), reps)})
        if i in chosen and chosen[i] is not None:
            chosen[i] = clone_inputs(sets[i % n])
        threads_before.clear()
        threads_before.update(threading.enumerate())

    def keep(i: int, out: Any) -> None:
        if i in chosen:
            snap = [t.clone() if isinstance(t, torch.Tensor) else t for t in correctness.flatten_outputs(out)]
            outs[i] = (out, snap)
        outliving.extend(t for t in threading.enumerate() if t not in threads_before)

    def call(i: int) -> Any:
        with torch.no_grad():
            return model(*sets[i % n])

    stats = timing.time_calls(call, backend, plan, keep=keep if recheck_ref is not None else None,
                              before=before)
    problems: list[tuple[str, str]] = []
    if recheck_ref is not None:
        for i, (out, snap) in sorted(outs.items()):
            inputs = chosen[i] if chosen[i] is not None else sets[i % n]
            with torch.no_grad():
                ref_out = recheck_ref(*clone_inputs(inputs))
            backend.synchronize()
            now = correctness.compare_outputs(ref_out, out, device)
            flat = correctness.flatten_outputs(out)
            unchanged = len(flat) == len(snap) and all(
                not isinstance(a, torch.Tensor) or (isinstance(b, torch.Tensor) and a.shape == b.shape
                                                    and a.dtype == b.dtype and anticheat._same(a, b))
                for a, b in zip(flat, snap, strict=True))
            at_return = now if unchanged else correctness.compare_outputs(ref_out, snap, device)
            if not now.passed:
                problems.append(("timed_output_mismatch", f"timed call {i} (input set {i % n}): {now.detail}"))
            elif not at_return.passed:
                problems.append(("work_after_return", f"timed call {i}: its output was incomplete when forward "
                                 f"returned and was finished later ({at_return.detail})"))
        ended = [t for t in outliving if not t.is_alive()]
        if ended:
            problems.append(("work_after_return", f"{len(ended)} thread(s) started inside timed calls were still "
                             "running when forward returned and ended later"))
    return stats.as_dict(), problems


# --------------------------------------------------------------------------------------------------------
# Anti-cheat checks that need the models


def check_reference_ops(task: Any, ref: Any, cand: Any, device: Any, verdict: dict[str, Any]) -> None:
    """Reject a candidate whose forward runs every compute op of the reference's own forward."""
    inputs = make_inputs(task, device, 0, "task")
    with torch.no_grad():
        ref_ops = anticheat.compute_ops(anticheat.aten_ops(lambda: ref(*clone_inputs(inputs))))
        cand_ops = anticheat.compute_ops(anticheat.aten_ops(lambda: cand(*clone_inputs(inputs))))
    verdict["aten_ops"] = {"reference": sorted({n for n, _ in ref_ops}), "candidate": sorted({n for n, _ in cand_ops})}
    if ref_ops and ref_ops <= cand_ops:
        names = ", ".join(sorted({n for n, _ in ref_ops})[:4])
        add_flag(verdict, "reference_ops",
                 f"forward runs all of the reference's own PyTorch compute ops on the same shapes ({names}); "
                 "PyTorch may do part of the work, but the candidate's kernel must compute the result")


SABOTAGE_WHY = {
    "nan": "stays correct when the results of the candidate's kernels are overwritten with NaN: it is computed "
           "elsewhere (a PyTorch path or a cache), not by the kernel",
    "identity": "stays correct when each of the candidate's kernels is replaced by a copy of its own input: the "
                "kernels compute nothing the output needs (PyTorch ops or a cache compute it, and a kernel only "
                "copies); a kernel must compute part of the result",
}


def check_sabotage(task: Any, ref: Any, cand: Any, probe: anticheat.KernelProbe, device: Any,
                   verdict: dict[str, Any], backend: Any) -> None:
    """Every output must change when the kernels' results are discarded (NaN) or the kernels turned into
    copies of their inputs (identity). Each sabotaged call gets the very tensors of a normal call just
    before, so a cache keyed on them (address, version, content) would answer it: then the output stays
    right without the kernel, and that is what is flagged."""
    if probe.launches == 0:
        return
    inputs = make_inputs(task, device, 21, "task")
    probe.protect(inputs)
    probe.protect(list(cand.parameters()) + list(cand.buffers()))
    with torch.no_grad():
        cand(*inputs)
        backend.synchronize()
        ref_out = ref(*clone_inputs(inputs))
    refs = correctness.flatten_outputs(ref_out)
    for mode in ("nan", "identity"):
        probe.mode, probe.replaced = mode, 0
        try:
            with torch.no_grad():
                out = cand(*inputs)
            backend.synchronize()
        except Exception:  # the sabotaged results broke the forward: they were used
            continue
        finally:
            probe.mode = None
        if mode == "identity" and probe.replaced == 0:
            continue  # no launch had an input shaped like its result: a copy cannot be what it does
        outs = correctness.flatten_outputs(out)
        untouched = [i for i, (r, o) in enumerate(zip(refs, outs, strict=False))
                     if isinstance(r, torch.Tensor) and r.is_floating_point()
                     and correctness.compare_tensor(r, o, device).passed]
        if untouched:
            add_flag(verdict, "kernel_not_used", f"output {untouched} {SABOTAGE_WHY[mode]}")
            return


def check_repeats(task: Any, ref: Any, cand: Any, backend: Any, device: Any, verdict: dict[str, Any],
                  repeats: int = 8) -> bool:
    """Thorough tier: the same inputs many times, freed blocks poisoned in between. Every result must pass;
    results that are not bit-identical get a `nondeterministic` warning (atomics are honest, uninitialised
    reads are not: cheat pattern 16)."""
    inputs = make_inputs(task, device, 0, "task")
    with torch.no_grad():
        ref_out = ref(*clone_inputs(inputs))
    first = None
    differ = False
    for k in range(repeats):
        with torch.no_grad():
            out = cand(*clone_inputs(inputs))
        backend.synchronize()
        res = correctness.compare_outputs(ref_out, out, device)
        if not res.passed:
            verdict["trials"].append({"trial": f"repeat {k + 1} of the same inputs", "passed": False,
                                      "failed_check": res.check, "detail": res.detail})
            verdict["failed_check"] = f"repeat:{res.check}"
            return False
        flat = [t for t in correctness.flatten_outputs(out) if isinstance(t, torch.Tensor)]
        if first is None:
            first = flat
        elif not all(torch.equal(a, b) or (a.is_floating_point() and anticheat._same(a, b))
                     for a, b in zip(first, flat, strict=True)):
            differ = True
        poison_freed(output_nbytes(out), device)
        del out
    verdict["trials"].append({"trial": f"{repeats} repeats of the same inputs", "passed": True})
    if differ:
        add_flag(verdict, "nondeterministic", "repeated calls on the same inputs gave results that are not bit-"
                 "identical (fine for atomics; a sign of reading uninitialised memory otherwise)", rejects=False)
    return True


def check_roofline(task: Any, ref: Any, backend: Any, device: Any, verdict: dict[str, Any],
                   job: dict[str, Any]) -> None:
    cand_ms = (verdict["timing"].get("candidate") or {}).get("median_ms")
    if not cand_ms:
        return
    inputs = make_inputs(task, device, 0, "task")
    nbytes, flops = roofline.count(ref, inputs)
    ceil = roofline.ceilings(device, verdict["device"]["name"], job["build_root"])
    fp32 = all(t.dtype == torch.float32 for t in inputs if isinstance(t, torch.Tensor) and t.is_floating_point())
    floor, bound = roofline.floor_ms(nbytes, flops, ceil, fp32)
    slack = roofline.SLACK["cuda" if device.type == "cuda" else "cpu"]
    if cand_ms < floor * slack:  # before accusing: were the cached ceilings measured on a busy machine?
        ceil = roofline.ceilings(device, verdict["device"]["name"], job["build_root"], refresh=True)
        floor, bound = roofline.floor_ms(nbytes, flops, ceil, fp32)
    frac = floor / cand_ms if cand_ms > 0 else None
    verdict["roofline"] = {"bytes": nbytes, "flops": flops, "floor_ms": round(floor, 6), "bound": bound,
                           "fraction": round(frac, 4) if frac is not None else None,
                           "bandwidth_GBps": round(ceil["bandwidth_Bps"] / 1e9, 1),
                           "fp32_tflops": round(ceil["fp32_flops"] / 1e12, 2)}
    if frac is not None and cand_ms < floor * slack:
        add_flag(verdict, "faster_than_roofline",
                 f"{cand_ms:.4f} ms is below the {bound} floor of {floor:.4f} ms for {nbytes / 1e6:.1f} MB and "
                 f"{flops / 1e9:.2f} GFLOP on this device: not physically possible, so not believed")


# --------------------------------------------------------------------------------------------------------


def _trials(n: int, tier: str = "default") -> list[tuple[str, str, int]]:
    """The main trials. bare: the five plain ones (task, normal, signed uniform, x64, another task seed);
    default: the first four plus ties and a shifted mean (a second task seed adds little to the others);
    thorough: all of them plus another seed of every distribution. `n` < 5 keeps only the first n."""
    plain = [("task inputs, seed 0", "task", 0), ("normal", "normal", 1), ("signed uniform", "signed_uniform", 2),
             ("large magnitude", "large", 3), ("task inputs, seed 4", "task", 4)][: max(1, n)]
    if tier == "bare":
        return plain
    base = plain[:4] + [("ties (multiples of 0.5)", "ties", 5), ("shifted mean (+16 std)", "shifted", 6)]
    if tier == "thorough":
        base += plain[4:] + [("normal, seed 11", "normal", 11), ("signed uniform, seed 12", "signed_uniform", 12),
                             ("large magnitude, seed 13", "large", 13), ("ties, seed 15", "ties", 15),
                             ("shifted mean, seed 16", "shifted", 16)]
    return base


def verify_other_init(task: Any, cand_cls: Any, backend: Any, device: Any, verdict: dict[str, Any],
                      phases: Phases) -> bool:
    """One trial with other init arguments (every float scaled by 1.37), when the reference accepts them:
    constants baked in from get_init_inputs() are wrong here (cheat pattern 12)."""
    init = other_init(list(task.get_init_inputs()))
    if init is None:
        return True
    phases.enter("verify_other_init")
    try:  # the reference must be buildable and finite with them; otherwise the task does not allow it
        ref, _ = build_models(task, None, device, init=init)
        with torch.no_grad():
            probe_out = ref(*make_inputs(task, device, 9, "task"))
        if not all(bool(torch.isfinite(t).all()) for t in correctness.flatten_outputs(probe_out)
                   if isinstance(t, torch.Tensor) and t.is_floating_point()):
            raise ValueError("reference not finite")
    except Exception as exc:
        verdict["trials"].append({"trial": "other init arguments", "passed": True,
                                  "skipped": f"the reference does not accept them ({type(exc).__name__})"})
        return True
    _, cand = build_models(task, cand_cls, device, init=init)
    n_before = len(verdict["trials"])
    ok = run_trials(task, ref, cand, backend, device, verdict, [("other init arguments (floats x1.37)", "task", 9)],
                    second_calls=0)
    for t in verdict["trials"][n_before:]:
        t["init"] = repr(init)[:200]
    if not ok:
        verdict["failed_check"] = f"other_init:{verdict['failed_check']}"
    del ref, cand
    gc.collect()
    return ok


def _classify_exception(exc: BaseException) -> tuple[str, str]:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    name = type(exc).__name__
    low = text.lower()
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)) or "out of memory" in low or "can't allocate memory" in low:
        return "out_of_memory", text
    if "CompilationError" in name or "Error building extension" in text:
        return "compile_error", text
    return "runtime_error", text


def _forward_failed(verdict: dict[str, Any], exc: Exception, where_label: str) -> None:
    """Record an exception raised while running the candidate (a Triton compile error counts as compiling)."""
    kind, text = _classify_exception(exc)
    verdict["status"], verdict["correct"] = kind, False
    where = _candidate_tb(exc)
    verdict["error"] = text[-1500:] + (f" ({where})" if where else "")
    if kind == "compile_error":
        verdict["compiled"] = False
        verdict["compiler_message"] = text[-8000:]  # finalize() writes the reason from it
    else:
        verdict["reason"] = f"{kind.replace('_', ' ')} {where_label}: {verdict['error'][:400]}"


def _candidate_tb(exc: BaseException) -> str:
    """The traceback lines inside the candidate file, which is what its author can fix."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith("candidate.py")]
    return "; ".join(f"candidate.py line {f.lineno}: {f.line}" for f in frames[-2:])


def evaluate(job: dict[str, Any], verdict: dict[str, Any], phases: Phases) -> None:
    tampered_now, flag_now = tampered, add_flag  # locals: the candidate can rebind module globals, not these

    def check_tampering() -> bool:
        changed = tampered_now()
        if changed:
            flag_now(verdict, "timer_tampering", f"the candidate replaced trusted functions: {', '.join(changed[:5])}")
        return bool(changed)
    # fp32 means fp32 for the reference and the baselines: no TF32 (cheat pattern 14 is about candidates
    # doing this silently; the reference must not do it either).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    backend = get_backend(job["backend"])
    backend.prepare(job["build_root"], job.get("threads"), fast_build=job.get("fast_build", True))
    probe = anticheat.KernelProbe()
    if job["mode"] != "baseline":
        probe.install(backend.name)
    device = backend.device(job.get("device_index", 0))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    verdict["device"] = backend.device_info()
    task = load_task_source(job["task_source"], job["task_path"], size=job["size"], name=job.get("task_name"),
                            check_inputs=False)  # the real inputs are validated as they are drawn
    verdict["size"] = job["size"]

    if job["mode"] == "baseline":
        phases.enter("baseline")
        ref, _ = build_models(task, None, device)
        plan = timing.TimingPlan(**job.get("timing_plan", {}))
        verdict["timing"]["eager"], _ = time_model(ref, task, backend, device, plan)
        if "compile" in job.get("baselines", ()):
            phases.enter("baseline_compile")
            try:
                compiled = torch.compile(ref)
                with torch.no_grad():
                    compiled(*make_inputs(task, device, 100, "task"))
                verdict["timing"]["compile"], _ = time_model(compiled, task, backend, device, plan)
            except Exception as exc:  # torch.compile failing is a fact about the baseline, not an error
                verdict["timing"]["compile"] = {"error": "".join(traceback.format_exception_only(type(exc), exc))[-500:]}
        verdict["status"] = "accepted"
        verdict["correct"] = True
        verdict["reason"] = "baseline timings"
        return

    static = backend.static_problems(job["candidate_source"])
    if static:
        verdict["status"] = "invalid_candidate"
        verdict["reason"] = f"not a valid {backend.name} candidate: " + "; ".join(static)
        return

    for name, why in anticheat.static_flags(job["candidate_source"]):
        add_flag(verdict, name, why)
    take_snapshot()
    phases.enter("compile")
    t0 = time.perf_counter()
    try:
        module = import_candidate(job["candidate_source"], os.getcwd())
        cand_cls = getattr(module, "ModelNew", None)
        if cand_cls is None:
            raise TaskError("the candidate module defines no `ModelNew`")
        ref, cand = build_models(task, cand_cls, device)
    except Exception as exc:
        kind, text = _classify_exception(exc)
        verdict["compile_seconds"] = round(time.perf_counter() - t0, 3)
        if kind == "out_of_memory":
            verdict["status"] = "out_of_memory"
            verdict["reason"] = f"out of memory while loading the candidate: {text[:300]}"
        else:
            verdict["status"] = "compile_error"
            verdict["compiler_message"] = text[-8000:]
            where = _candidate_tb(exc)
            if where and "Error building extension" not in text:
                verdict["compiler_message"] += f"\n({where})"
        return
    verdict["compiled"] = True
    verdict["compile_seconds"] = round(time.perf_counter() - t0, 3)
    if job["mode"] == "compile":
        verdict["status"] = "accepted"
        verdict["reason"] = "compiled"
        verdict["correct"] = None
        return
    if check_tampering():
        verdict["status"], verdict["correct"], verdict["failed_check"] = "rejected", False, "timer_tampering"
        return

    phases.enter("first_call")  # NVRTC and Triton candidates compile here, at their first launch
    try:
        with torch.no_grad():
            cand(*make_inputs(task, device, 0, "task"))
        backend.synchronize()
    except Exception as exc:
        _forward_failed(verdict, exc, "at the first call of forward")
        return
    tier = job.get("tier", "default")
    if tier not in TIERS:
        raise TaskError(f"unknown tier {tier!r}; choose one of {', '.join(TIERS)}")
    checks = tier != "bare"
    verdict["tier"] = tier
    phases.enter("verify")
    try:
        ok = run_trials(task, ref, cand, backend, device, verdict, _trials(job.get("trials", 5), tier), checks)
        if ok and tier == "thorough":
            ok = check_repeats(task, ref, cand, backend, device, verdict)
    except Exception as exc:
        _forward_failed(verdict, exc, "in forward")
        return

    def verify_variants() -> None:
        """Other init arguments, then the second shape: last, so that the models need no rebuilding."""
        nonlocal ref, cand
        del ref, cand
        gc.collect()
        try:
            ok = verify_other_init(task, cand_cls, backend, device, verdict, phases)
            if ok and job.get("alt_size") and job["alt_size"] != job["size"] and job["alt_size"] in task.sizes:
                phases.enter("verify_other_shape")
                alt = task.at_size(job["alt_size"])
                ref, cand = build_models(alt, cand_cls, device)
                n_before = len(verdict["trials"])
                ok = run_trials(alt, ref, cand, backend, device, verdict, [("other shape (alt size)", "task", 7),
                                                                            ("other shape, normal", "normal", 8)])
                for t in verdict["trials"][n_before:]:
                    t["size"] = job["alt_size"]
                if not ok:
                    verdict["failed_check"] = f"other_shape:{verdict['failed_check']}"
        except Exception as exc:
            _forward_failed(verdict, exc, "in forward (other init arguments or the second shape)")
            return
        if not ok:
            verdict["correct"], verdict["status"] = False, "incorrect"

    verdict["correct"] = ok
    verdict["status"] = "accepted" if ok else "incorrect"
    check_tampering()
    if not ok:
        return
    verdict["kernel_launches"] = dict(probe.calls)
    if not checks:  # the bare tier: plain timing, nothing else (a measurement baseline, never for the agent)
        if job.get("timing", True):
            phases.enter("time")
            backend.empty_cache()
            plan = timing.TimingPlan(**job.get("timing_plan", {}))
            verdict["timing"]["candidate"], _ = time_model(cand, task, backend, device, plan, vary=False)
        return
    if probe.launches == 0:
        add_flag(verdict, "no_kernel_launched",
                 f"forward never launched a {backend.name} kernel of its own (no call into its compiled "
                 "extension, NVRTC kernel or Triton kernel); the computation must run in the candidate's kernel")
    phases.enter("check_ops")
    check_reference_ops(task, ref, cand, device, verdict)
    if any(f["rejects"] for f in verdict["flags"]):
        return
    if not job.get("timing", True):
        check_sabotage(task, ref, cand, probe, device, verdict, backend)
        if not any(f["rejects"] for f in verdict["flags"]):
            verify_variants()
        return

    phases.enter("time")
    backend.empty_cache()
    plan = timing.TimingPlan(**job.get("timing_plan", {}))
    stats, problems = time_model(cand, task, backend, device, plan, recheck_ref=ref,
                                 n_snapshots=8 if tier == "thorough" else 1, every_set=tier == "thorough")
    verdict["timing"]["candidate"] = stats
    seen: set[str] = set()
    for flag, detail in problems:
        if flag in seen:
            continue
        seen.add(flag)
        if flag == "timed_output_mismatch":
            add_flag(verdict, flag, f"an output of a timed call was wrong ({detail}); results must not depend on "
                     "call history (timed inputs change a few elements between calls)")
        else:
            add_flag(verdict, flag, f"work continued after forward returned ({detail}); all work must finish "
                     "inside forward (join threads before returning)")
    check_tampering()
    phases.enter("roofline")
    check_roofline(task, ref, backend, device, verdict, job)
    phases.enter("sabotage")
    check_sabotage(task, ref, cand, probe, device, verdict, backend)
    if not any(f["rejects"] for f in verdict["flags"]):
        verify_variants()
    check_tampering()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--wait":
        # A pre-started worker: torch is imported already; the job's path arrives on stdin.
        line = sys.stdin.readline().strip()
        if not line:
            os._exit(0)
        argv = [line]
        os.chdir(os.path.dirname(line))
    with open(argv[0]) as f:
        job = json.load(f)
    # Locals taken before any candidate code runs: what writes the verdict cannot be swapped out.
    _finalize, _dump, _replace, _exit = finalize, json.dump, os.replace, os._exit
    verdict = new_verdict(job.get("task_name", ""), job["backend"])
    phases = Phases(job.get("phase_path"))
    phases.seconds["imports"] = round(min(time.perf_counter() - _T_START, _T_IMPORTED - _T_START), 3)
    t0 = time.time()
    try:
        evaluate(job, verdict, phases)
    except TaskError as exc:
        verdict["status"] = "error"
        verdict["reason"] = f"task error: {exc}"
    except BaseException as exc:  # SystemExit from exit() in the candidate lands here too
        kind, text = _classify_exception(exc)
        if isinstance(exc, SystemExit):
            kind, text = "crashed", f"the candidate called exit({exc.code}) during {phases.name}"
        verdict["status"] = kind
        verdict["error"] = text[-1500:]
        verdict["reason"] = f"{kind.replace('_', ' ')} during {phases.name}: {text[:400]}"
    verdict["phase"] = phases.name
    phases.enter("done")
    verdict["phase_seconds"] = phases.seconds
    verdict["wall_seconds"] = round(time.time() - t0, 3)
    _finalize(verdict)
    tmp = job["result_path"] + ".tmp"
    with open(tmp, "w") as f:
        _dump(verdict, f, indent=1, default=str)
    _replace(tmp, job["result_path"])
    sys.stdout.flush()
    sys.stderr.flush()
    # Do not wait for threads or atexit hooks the candidate may have left behind.
    _exit(0)


if __name__ == "__main__":
    main()
