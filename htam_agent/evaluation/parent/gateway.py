"""The one door from a candidate to its verdict, for every caller: the graph's nodes, the LangChain tools, the
bench and `htam eval`.

It owns what used to be decided in several places: local evaluation or replay of stored verdicts (a GPU backend
on a machine without a GPU), the per-device lock that lets candidates compile in parallel but be timed one at a
time, and the two verdicts that are not measurements (no code to evaluate; not evaluated here). A candidate
carries its task's source (`Candidate.task_source`), read once when the run started: a task file edited during a
run or before `--resume` cannot make a candidate compile against one source and be timed against another.

Imports only the standard library and the evaluator (no LangChain), so a bare GPU host can use it too.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Literal, get_args

from htam_agent.backend_registry import is_cpu

from ..common import gpu
from ..common.verdict import VerdictBuilder, with_envelope
from .candidate import Candidate
from .evaluator import Evaluator

Mode = Literal["local", "replay"]
#: what a run may ask for (context.RunContext.evaluation): a mode, or `auto` (resolve_mode picks one)
EvaluationMode = Literal["auto", Mode]
MODES: tuple[str, ...] = get_args(EvaluationMode)

_device_locks: dict[int, threading.Lock] = {}
_locks_guard = threading.Lock()


def device_lock(index: int) -> threading.Lock:
    """One lock per device index, shared by every gateway of the process (several graphs may run at once)."""
    with _locks_guard:
        return _device_locks.setdefault(index, threading.Lock())


def resolve_mode(requested: str, backend: str) -> Mode:
    """`auto` evaluates locally where the backend's device exists, else replays stored verdicts."""
    if requested not in MODES:
        raise ValueError(f"evaluation mode {requested!r}: expected one of {', '.join(MODES)}")
    if requested != "auto":
        return requested  # type: ignore[return-value]
    if is_cpu(backend):
        return "local"
    return "local" if gpu.usable() else "replay"  # asked of NVML: CUDA stays uninitialised in the caller


def no_code_verdict(task: str, backend: str, why: str) -> dict[str, Any]:
    """The verdict of a reply without a candidate: repairable, never a measurement."""
    v = VerdictBuilder(task, backend)
    v.set_status("invalid_candidate", f"no candidate code: {why or 'the coder returned nothing'}")
    v.record(no_code=True)
    return dict(v.finalize())


def not_evaluated(task: str, backend: str, why: str) -> dict[str, Any]:
    """The verdict of a candidate this machine cannot evaluate: the memory learns nothing from it."""
    v = VerdictBuilder(task, backend)
    v.set_status("error", why)
    v.record(not_evaluated=True)
    return dict(v.finalize())


class EvaluationGateway:
    """Compile, verify or benchmark a candidate, locally or from the verdict store."""

    def __init__(self, evaluator: Evaluator, mode: Mode = "local") -> None:
        if mode not in ("local", "replay"):
            raise ValueError(f"gateway mode {mode!r}: expected local or replay (resolve `auto` first)")
        self.evaluator = evaluator
        self.mode: Mode = mode
        self._verifier: Evaluator | None = None

    @property
    def backend(self) -> str:
        return self.evaluator.options.backend

    @property
    def local(self) -> bool:
        return self.mode == "local"

    def compile(self, cand: Candidate) -> dict[str, Any]:
        """Build only (no run): a compiler error comes back with its first diagnostic."""
        return self.evaluator.compile_only(cand) if self.local else self._replayed(cand)

    def verify(self, cand: Candidate) -> dict[str, Any]:
        """Correctness and the anti-cheat rules, without timing."""
        if not self.local:
            return self._replayed(cand)
        if self._verifier is None:
            ev = self.evaluator
            self._verifier = Evaluator(replace(ev.options, timing=False, baselines=()), ev.store, ev.device)
        return self._verifier.evaluate(cand)

    def benchmark(self, cand: Candidate) -> dict[str, Any]:
        """The full verdict: compile, verify, time against the baselines, roofline. Timed under the device lock."""
        if not self.local:
            return self._replayed(cand)
        with device_lock(self.evaluator.options.device_index):
            return self.evaluator.evaluate(cand)

    def no_code(self, name: str, why: str) -> dict[str, Any]:
        return no_code_verdict(name, self.backend, why)

    def _replayed(self, cand: Candidate) -> dict[str, Any]:
        ev = self.evaluator
        key = ev.key(cand)
        hit = ev.store.get(key) if ev.store is not None else None
        if hit is None:
            return not_evaluated(cand.name, self.backend, (
                f"no {self.backend} device on this machine and no stored verdict for this candidate "
                f"(key {key[:12]}); evaluate it on a GPU host with `python -m htam_agent.evaluation batch` "
                "and import the verdicts with `htam verdicts import`"))
        return with_envelope(hit, cached=True)
