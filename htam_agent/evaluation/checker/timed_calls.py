"""Timed calls: one request per call, under the checker's clock, on input sets that change inside each window.

A candidate and a baseline are timed by the same code here: the same requests, the same flush, the same
hand-over of outputs, the same estimators. A slot is timed alone (`time_candidate`), or a candidate's slot
interleaved with the reference's in a sandbox of its own (`time_paired`): blocks of calls alternate
between the two, and the candidate's sandbox is frozen while the reference runs. Interleaving is what
makes the comparison fair on a machine whose speed drifts: on the 2-core VM the same eager forward, timed
in fresh processes seconds apart, had medians from 2.0 to 7.7 ms (2026-12-02), so two medians taken at
different times compare the machine's moments, not the code.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import torch

from ..common import observe, protocol
from . import inputs as inp
from . import judge, timing
from .sandbox_client import CandidateFailed
from .state import Run

CALIBRATION_CALLS = 25
PAIRED_BLOCK = 8  # calls per block when two slots are interleaved (about 20-80 ms of a typical CPU task)


def reference_outputs(run: Run, ref: Any, inputs: list[Any]) -> Any:
    with torch.no_grad():
        out = ref(*inp.clone_inputs(inputs))
    run.sync()
    return out


def free_cached(run: Run) -> None:
    """Give the checker's cached GPU blocks back: the sandbox allocates from the same device."""
    if run.device.type == "cuda":
        torch.cuda.empty_cache()


def fits_sets(inputs: list[Any], device: Any, n_sets: int) -> int:
    """How many distinct input sets to rotate through while timing (fresh inputs, cheat pattern 8)."""
    if device.type != "cuda":
        return n_sets
    need = sum(x.untyped_storage().nbytes() for x in inputs if isinstance(x, torch.Tensor))
    free, _ = torch.cuda.mem_get_info()
    return max(1, min(n_sets, int(free * 0.4 // max(need, 1))))


def _output_spec(out: Any) -> list[list[Any]]:
    return [[list(o.shape), str(o.dtype).removeprefix("torch.")] for o in observe.flatten_outputs(out)
            if isinstance(o, torch.Tensor)]


def calibrate(run: Run, n: int = CALIBRATION_CALLS) -> list[float]:
    """The checker's clock around timed requests of a no-op, made before any candidate code is imported:
    the same inputs' shapes, the same perturbation, flush and hand-over of outputs shaped like the
    reference's. What a timed request costs beyond the call itself (ms per request)."""
    inputs = inp.make_inputs(run.task, run.device, run.seed + 97, "task")
    run.sb.ask("noop_like", run.left(), outputs=_output_spec(reference_outputs(run, run.ref, inputs)))
    enc, ids = run.sb.upload(inputs, run.left())
    view = run.sb.shared_values(enc)
    del inputs
    gen = torch.Generator().manual_seed(run.seed + 98)
    walls = []
    for i in range(n):
        wall, msg = _timed_request(run, "__noop__", enc, view, gen, f"cal{i}")
        protocol._close_all(msg.fds)
        walls.append(wall)
    run.sb.ask("release", run.left(), ids=[f"cal{i}" for i in range(n)], poison=False)
    run.sb.free(ids, run.left())
    return walls


def _timed_request(run: Run, slot: str, enc: Any, view: Any, gen: Any, out_id: str) -> tuple[float, Any]:
    """One timed request, clocked here: the clock starts before this call's inputs change (they are
    revealed inside the window) and stops when the reply, with the sealed outputs, has arrived."""
    change = inp.perturbation(view, gen)
    on_gpu = run.device.type == "cuda"
    if on_gpu:
        torch.cuda.synchronize()
    else:  # the CPU's caches are the machine's: the checker flushes them, where no candidate can reach it
        run.backend.flush_cache()
    t0 = time.perf_counter_ns()
    inp.apply_perturbation(view, change)
    if on_gpu:
        torch.cuda.synchronize()  # the sandbox reads what the checker wrote
    msg = run.sb.request("timed", run.left(), slot=slot, inputs=enc, seal=True, out_id=out_id, flush=on_gpu)
    wall = (time.perf_counter_ns() - t0) / 1e6
    msg.body["change"] = change
    return wall, msg


def _num(x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or x != x or x in (float("inf"), float("-inf")):
        raise CandidateFailed({"kind": "runtime_error", "text": f"the candidate's process reported a time of {x!r}"})
    return float(x)


def reps_for(plan: timing.TimingPlan, est_ms: float) -> int:
    return int(min(plan.max_reps, max(plan.min_reps, plan.target_s * 1e3 / max(est_ms, 1e-3))))


class TimedSlot:
    """One slot's timed calls, taken a request at a time (`step`), so that two sandboxes can take turns.

    The input sets live in the sandbox's buffers, which the checker writes: inside each request's clocked
    window a few scattered elements change (no two calls see the same input, and nothing can be computed
    before the window). The checker keeps no copy: it remembers each set's seed and every change made to
    it, and rebuilds the exact inputs of a re-checked call from them. Which calls are re-checked is drawn
    in advance; every timed output is sealed inside its request (at return), and a chosen one is read
    again at the end.
    """

    def __init__(self, run: Run, plan: timing.TimingPlan, recheck: bool, calibration: list[float],
                 n_sets: int = 3, n_snapshots: int = 1, every_set: bool = False, slot: str = "main") -> None:
        self.run, self.plan, self.recheck, self.calibration = run, plan, recheck, calibration
        self.n_sets, self.n_snapshots, self.every_set, self.slot = n_sets, n_snapshots, every_set, slot
        self.chosen: set[int] = set()
        self.changes: list[list[tuple[int, Any]]] = []  # the perturbation of each call, to rebuild its inputs
        self.at_return: dict[int, tuple[Any, list[dict[str, Any]], str | None]] = {}
        self.walls: list[float] = []
        self.reported: list[float] = []
        self.host: list[float] = []
        self.outliving = 0
        self.warmup = 0

    def _draw(self, s: int) -> list[Any]:
        return inp.make_inputs(self.run.task, self.run.device, self.run.seed + 100 + s, "task")

    def warm(self) -> float:
        """Upload the input sets and warm the slot up; the sandbox's estimate of one call, ms."""
        run = self.run
        first = self._draw(0)
        self.n = fits_sets(first, run.device, self.n_sets)
        self.uploaded = [run.sb.upload(first if s == 0 else self._draw(s), run.left()) for s in range(self.n)]
        del first
        free_cached(run)
        self.encs = [e for e, _ in self.uploaded]
        self.views = [run.sb.shared_values(e) for e in self.encs]
        warm = run.sb.ask("warmup", run.left(), slot=self.slot, sets=self.encs, min=self.plan.min_warmup,
                          seconds=self.plan.warmup_s)
        self.warmup = int(warm.get("warmup") or 0)
        return max(_num(warm.get("est_ms")), 1e-3)

    def plan_calls(self, reps: int) -> None:
        self.reps = reps
        self.gen = torch.Generator().manual_seed(self.run.seed + 7)
        if self.recheck:
            last = self.n if self.every_set else 1
            k = min(self.n_snapshots, max(0, reps - last))
            self.chosen.update(torch.randperm(max(reps - last, 1), generator=self.gen)[:k].tolist() if k else [])
            self.chosen.update(range(max(0, reps - last), reps))

    def step(self, i: int) -> None:
        run, sb, device = self.run, self.run.sb, self.run.device
        s = i % self.n
        wall, msg = _timed_request(run, self.slot, self.encs[s], self.views[s], self.gen, f"sealed{i}")
        self.changes.append(msg.body.pop("change"))
        self.walls.append(wall)
        r = msg.body
        self.reported.append(_num(r.get("device_ms")))
        self.host.append(_num(r.get("host_ms")))
        self.outliving += int(r.get("threads_alive") or 0)
        if r.get("launches") == 0 and self.slot == "main" and run.job["mode"] == "evaluate":
            run.silent_calls.append(f"timed call {i}")
        if i not in self.chosen:
            protocol._close_all(msg.fds)
            if device.type == "cuda":
                sb.ask("release", run.left(), ids=[f"sealed{i}"], poison=False)
            return
        if device.type == "cuda":
            protocol._close_all(msg.fds)
            self.at_return[i] = sb.outputs(sb.request("export", run.left(), out_id=f"sealed{i}"))
        else:
            self.at_return[i] = sb.outputs(msg)
        sb.ask("export", run.left(), out_id=f"timed{i}", last=True)  # the live output, read again below

    def finish(self) -> tuple[dict[str, Any], list[tuple[str, str]], judge.WallClock]:
        """The statistics of record, what the re-checks found, and the checker's clock."""
        run, sb, device, n = self.run, self.run.sb, self.run.device, self.n
        t0 = time.perf_counter_ns()
        sb.ask("sync", run.left())
        wall = judge.WallClock(self.calibration, self.walls, self.reported, (time.perf_counter_ns() - t0) / 1e6)
        stats = timing.summarize(self.reported, self.host, self.warmup).as_dict()
        problems: list[tuple[str, str]] = []
        for i in sorted(self.at_return):
            inputs = self._draw(i % n)
            for j in range(i % n, i + 1, n):
                inp.apply_perturbation(inputs, self.changes[j])
            ref_out = reference_outputs(run, run.ref, inputs)
            del inputs
            out, facts, prob = sb.outputs(sb.request("export", run.left(), out_id=f"timed{i}"))
            now = judge.compare(ref_out, out, facts, device, prob)
            del out
            out, facts, prob = self.at_return.pop(i)
            then = judge.compare(ref_out, out, facts, device, prob)
            del out, ref_out
            free_cached(run)
            if not then.passed and not now.passed:
                problems.append(("timed_output_mismatch", f"timed call {i} (input set {i % n}): {then.detail}"))
            elif not then.passed:
                problems.append(("work_after_return", f"timed call {i}: its output was incomplete when forward "
                                 f"returned and was finished later ({then.detail})"))
            elif not now.passed:
                problems.append(("timed_output_mismatch", f"timed call {i} (input set {i % n}): its output was "
                                 f"right when the call returned and changed afterwards ({now.detail})"))
        sb.ask("release", run.left(), ids=[f"timed{i}" for i in self.chosen] + [f"sealed{i}" for i in self.chosen],
               poison=False)
        if self.outliving:
            ended = int(sb.ask("threads_ended", run.left()).get("ended") or 0)
            if ended:
                problems.append(("work_after_return", f"{ended} thread(s) started inside timed calls were still "
                                 "running when forward returned and ended later"))
        del self.views
        for _, ids in self.uploaded:
            sb.free(ids, run.left())
        return wall.settle(stats, device.type), problems, wall


def time_candidate(run: Run, plan: timing.TimingPlan, recheck: bool, calibration: list[float], n_sets: int = 3,
                   n_snapshots: int = 1, every_set: bool = False, slot: str = "main"
                   ) -> tuple[dict[str, Any], list[tuple[str, str]], judge.WallClock]:
    """Time one slot alone, one call per request on rotating input sets; re-check chosen timed outputs.

    Candidates and baselines alike go through here (a baseline's slot holds the reference in a sandbox
    of its own), so both are timed by one protocol in one process kind."""
    side = TimedSlot(run, plan, recheck, calibration, n_sets, n_snapshots, every_set, slot)
    side.plan_calls(reps_for(plan, side.warm()))
    for i in range(side.reps):
        side.step(i)
    return side.finish()


def paired_reps(plan: timing.TimingPlan, est_ms: float) -> int:
    """Calls per side when two slots are interleaved: the plan's budget of timed calls shared between them
    (half each, at least the plan's minimum), so that pairing does not double the time a verdict spends
    timing. What the halving costs in precision is small beside what the pairing removes: with a spread
    (IQR / median) of 17%, 100 calls instead of 200 move the median's standard error from about 1.1% to
    1.6%, while two medians taken apart in time differed by up to 3.8x on the 2-core VM."""
    return max(plan.min_reps, -(-reps_for(plan, est_ms) // 2))


def time_paired(run: Run, ref_run: Run, plan: timing.TimingPlan, recheck: bool, n_snapshots: int = 1,
                every_set: bool = False
                ) -> tuple[tuple[dict[str, Any], list[tuple[str, str]], judge.WallClock],
                           tuple[dict[str, Any], list[tuple[str, str]], judge.WallClock]]:
    """Time the candidate's slot and the reference's (in `ref_run`'s sandbox) interleaved: the same number
    of calls each (`paired_reps`), in blocks of PAIRED_BLOCK that alternate A B B A A B ..., so that a drift of the
    machine's speed falls on both alike. While one side runs, every process of the other's sandbox is
    frozen: nothing the candidate left running can slow the reference and so inflate its own speedup."""
    cand = TimedSlot(run, plan, recheck, run.calibration, n_snapshots=n_snapshots, every_set=every_set)
    ref = TimedSlot(ref_run, plan, False, ref_run.calibration)

    def alone(side: TimedSlot) -> contextlib.AbstractContextManager[None]:
        """The other sandbox frozen: the candidate's for security, the reference's so that both sides
        run under the very same conditions (a freeze and thaw between blocks, nothing else awake)."""
        other = ref if side is cand else cand
        return other.run.sb.paused({side.run.sb.proc.pid}, strays=other is cand)

    with alone(cand):
        est = cand.warm()
    with alone(ref):
        est = max(est, ref.warm())
    reps = paired_reps(plan, est)
    cand.plan_calls(reps)
    ref.plan_calls(reps)
    for b, start in enumerate(range(0, reps, PAIRED_BLOCK)):
        for side in ((cand, ref) if b % 2 == 0 else (ref, cand)):
            with alone(side):
                for i in range(start, min(reps, start + PAIRED_BLOCK)):
                    side.step(i)
    (c_stats, c_problems, c_wall), (r_stats, r_problems, r_wall) = cand.finish(), ref.finish()
    c_stats, r_stats = judge.settle_pair(c_stats, c_wall, r_stats, r_wall, run.device.type)
    return (c_stats, c_problems, c_wall), (r_stats, r_problems, r_wall)
