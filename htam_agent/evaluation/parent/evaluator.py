"""The evaluator: verdicts from the store, the task's baseline once per task and run, each candidate in a checker of
its own (job.py), and a batch's builds in parallel with its timed verdicts one at a time."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from htam_agent.backend_registry import is_cpu

from ..common import paths
from ..common.verdict import with_envelope
from .candidate import Candidate
from .fit import Fit, choose
from .job import run_job
from .options import EvalOptions
from .store import VerdictStore, candidate_key, device_name
from .task_facts import TaskFacts, task_facts


class Evaluator:
    """Evaluate candidates with caching: verdicts from the store, baselines once per task and run."""

    def __init__(self, options: EvalOptions | None = None, store: VerdictStore | None = None,
                 device: str | None = None) -> None:
        self.options = options or EvalOptions()
        self.store = store
        self.device = device or device_name(self.options.backend)
        self.build_root = self.options.build_root or str(paths.build_dir())
        self._baselines: dict[str, dict[str, Any]] = {}
        self._facts: dict[str, tuple[str, TaskFacts]] = {}
        self._fits: dict[tuple[str, str], Fit] = {}

    # -- keys ------------------------------------------------------------------------------------------
    def facts(self, cand: Candidate) -> TaskFacts:
        """The task file's sizes, derived overrides and footprints (parent/task_facts.py), found once per content:
        in a process of their own unless torch is loaded here already."""
        cached = self._facts.get(cand.task_path)
        if cached is None or cached[0] != cand.task_source:
            cached = (cand.task_source, task_facts(cand.task_source, cand.task_path))
            self._facts[cand.task_path] = cached
        return cached[1]

    def fit(self, cand: Candidate) -> Fit:
        """The size this task runs at on this device (parent/fit.py), decided once per task and evaluator."""
        facts = self.facts(cand)
        asked = self.options.resolve_size(cand.task_source, cand.task_path, has=facts.has)
        key = (cand.task_path, cand.task_source)
        if key not in self._fits:
            self._fits[key] = (choose(asked, self.options.backend, facts, self.options.device_index)
                               if self.options.fit else Fit(asked, asked, None, None))
        return self._fits[key]

    def key(self, cand: Candidate) -> str:
        size = self.fit(cand).size
        extra = self.options.key_fields()
        derived = self.derived_sizes(cand)
        if derived is not None:  # a derived size is part of what was evaluated (it may change with the deriver)
            extra["derived_sizes"] = derived
        return candidate_key(cand.source, cand.task_source, size, self.options.backend, self.device, extra)

    def baseline_key(self, cand: Candidate, names: tuple[str, ...] | None = None) -> str:
        size = self.fit(cand).size
        # Keyed by device, not backend: cuda and triton candidates share the GPU's eager/compile timings.
        device_type = "cpu" if is_cpu(self.options.backend) else "gpu"  # "gpu", not "cuda": stored keys
        extra: dict[str, Any] = {"timing_plan": self.options.timing_plan}
        derived = self.derived_sizes(cand)
        if derived is not None and size != "default":
            extra["derived_sizes"] = derived.get(size)
        names = self.options.baselines if names is None else names
        return candidate_key("<baseline>" + ",".join(names), cand.task_source, size,
                             device_type, self.device, extra)

    def derived_sizes(self, cand: Candidate) -> dict[str, Any] | None:
        """The small/alt sizes derived for a task file without SMALL_SIZES / ALT_SIZES (KernelBench's files),
        made here once (cached per content) and sent in the job, so that no process near candidate code
        derives sizes or reads their cache; None when the file defines both dicts."""
        return self.facts(cand).derived

    def _job(self, cand: Candidate, mode: str, identity: dict[str, Any] | None = None,
             baseline: dict[str, Any] | None = None, baselines: tuple[str, ...] | None = None,
             paired: bool | None = None, notes: list[str] | None = None) -> dict[str, Any]:
        """The job for a checker; `identity` (the store's key, kind, device) and `baseline` (the reference's
        timings) are what the checker needs to finalize the verdict the parent files, speedups included.
        `baselines` (a baseline job's: which to time) and `paired` override the options'; `notes` are warnings
        the verdict carries."""
        o = self.options
        return {
            "mode": mode, "backend": o.backend, "task_name": cand.name, "task_path": cand.task_path,
            "task_source": cand.task_source, "candidate_source": cand.source,
            "size": self.fit(cand).size, "fit_note": self.fit(cand).note(), "alt_size": o.alt_size,
            "trials": o.trials,
            "tier": o.tier, "timing": o.timing, "timing_plan": o.timing_plan,
            "baselines": list(o.baselines if baselines is None else baselines),
            "paired_eager": o.pairs_eager() if paired is None else paired,
            "threads": o.threads, "device_index": o.device_index, "build_root": self.build_root,
            "fast_build": o.fast_build, "derived_sizes": self.derived_sizes(cand),
            "identity": identity, "baseline": _baseline_facts(baseline), "notes": list(notes or []),
        }

    # -- phases ----------------------------------------------------------------------------------------
    def compile_only(self, cand: Candidate) -> dict[str, Any]:
        return run_job(self._job(cand, "compile"), self.options)

    def baseline(self, cand: Candidate, fresh: bool = False, names: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Eager and torch.compile timings of the task's reference (`names`, the options' baselines unless
        given), in a sandbox that never saw a candidate.

        Measured once per Evaluator. A GPU's baseline is also kept in the store and replayed (a GPU host's
        timings are steady); a CPU's is neither: a shared CPU's load changes from run to run, and an eager time measured slow but
        steady under load, replayed for ever, made every later speedup on that task wrong (a 7.99x seen on
        norm_rmsnorm that a fresh baseline put at 1.20x)."""
        names = self.options.baselines if names is None else names
        key = self.baseline_key(cand, names)
        store = None if is_cpu(self.options.backend) else self.store
        if not fresh:
            if key in self._baselines:
                return self._baselines[key]
            if store is not None and (hit := store.get(key)) is not None:
                self._baselines[key] = hit
                return hit
        verdict = run_job(self._job(cand, "baseline", identity={"key": key, "kind": "baseline"}, baselines=names),
                          self.options)
        if verdict["status"] == "accepted":
            self._baselines[key] = verdict
            if store is not None and storable(verdict):  # an unreliable one is measured again next run
                store.put(key, verdict)
        return verdict

    def evaluate(self, cand: Candidate, use_store: bool = True) -> dict[str, Any]:
        key = self.key(cand)
        if use_store and self.store is not None and (hit := self.store.get(key)) is not None:
            return with_envelope(hit, cached=True)
        o = self.options
        separate = o.separate_baselines() if o.timing else ()
        base = self.baseline(cand, names=separate) if separate else None
        identity = {"key": key, "kind": "candidate", "device_name": self.device}
        verdict = run_job(self._job(cand, "evaluate", identity=identity, baseline=base), o)
        if o.pairs_eager() and _unpaired(verdict):
            # The reference could not be timed beside the candidate (its own sandbox failed): judged again
            # against the eager baseline measured on its own, as an unpaired verdict is. Rare; the checker
            # stays the one writer of the verdict.
            notes = [w for w in verdict.get("warnings") or [] if "timed beside the candidate" in w]
            base = self.baseline(cand)
            verdict = run_job(self._job(cand, "evaluate", identity=identity, baseline=base, paired=False,
                                        notes=notes), o)
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
    from ..common.builder import environment_failure

    if verdict.get("status") in ("error", "timeout") or verdict.get("leftover_processes"):
        return False
    if any(isinstance(b, dict) and b.get("environment") for b in verdict.get("builds") or []):
        return False
    if verdict.get("status") == "compile_error" and environment_failure(str(verdict.get("compiler_message", ""))):
        return False
    return not any(f.get("name") == "timing_unreliable" for f in verdict.get("flags", []))


def _unpaired(verdict: dict[str, Any]) -> bool:
    """A timed verdict of a paired job that has no eager figure: the pairing failed (the checker warned)."""
    timing = verdict.get("timing") or {}
    return bool((timing.get("candidate") or {}).get("median_ms")) and not (timing.get("eager") or {}).get("median_ms")


def _baseline_facts(base: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a candidate's checker needs of the baseline verdict: its timings, status, reason and flags."""
    if base is None:
        return None
    timing = base.get("timing") if isinstance(base.get("timing"), dict) else {}
    return {"status": base.get("status"), "reason": base.get("reason"),
            "timing": {k: timing[k] for k in ("eager", "compile") if k in timing},
            "flags": [f for f in base.get("flags") or [] if isinstance(f, dict)]}


