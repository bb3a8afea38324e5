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
import errno
import hashlib
import json
import os
import random
import time
from typing import Any

import torch

from ..common import observe, protocol
from . import correctness, judge, remote_memory, timing
from . import inputs as inp
from .sandbox_client import CandidateFailed
from .state import Run

CALIBRATION_CALLS = 25
_SECRET = random.SystemRandom()  # which pages of a timed output are touched: unknown to the candidate
PAIRED_BLOCK = 8  # calls per block when two slots are interleaved (about 20-80 ms of a typical CPU task)


def reference_outputs(run: Run, ref: Any, inputs: list[Any], reuse: bool = True) -> Any:
    """The reference's outputs on `inputs`, which stay as they were when `reuse` (the caller needs them again).

    Without a copy of the inputs where that is safe: the first call runs the reference on clones and sees
    whether it writes its inputs (`Run.ref_mutates`); one that does always gets clones, one that does not gets
    the inputs themselves, its version counters watched (a full-size clone per call was one of the copies a
    verdict held: issue 36)."""
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    if reuse and run.ref_mutates is not False:
        clones = inp.clone_inputs(inputs)
        with torch.no_grad():
            out = ref(*clones)
        run.sync()
        if run.ref_mutates is None:
            run.ref_mutates = bool(inp.changed_inputs(inputs, clones))
        return out
    versions = [x._version for x in tensors]
    with torch.no_grad():
        out = ref(*inputs)
    run.sync()
    if reuse and [x._version for x in tensors] != versions:
        raise RuntimeError("the task's reference wrote its inputs in place on a later call but not on the first")
    return out


def free_cached(run: Run) -> None:
    """Give the checker's cached GPU blocks back: the sandbox allocates from the same device."""
    if run.device.type == "cuda":
        torch.cuda.empty_cache()


SPARE_SETS_BYTES = 256 << 20  # input sets beyond the first only while all of them together stay this small


def fits_sets(inputs: list[Any], device: Any, n_sets: int) -> int:
    """How many distinct input sets to rotate through while timing (fresh inputs, cheat pattern 8). Every set
    lives in the sandbox's memory for the whole timing, so a large task rotates over one (its inputs still
    change inside every timed window; issue 36: three 1 GiB sets in each of two sandboxes were 6 GiB)."""
    need = sum(x.untyped_storage().nbytes() for x in inputs if isinstance(x, torch.Tensor))
    n = max(1, min(n_sets, int(SPARE_SETS_BYTES // max(need, 1))))
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info()
        n = max(1, min(n, int(free * 0.4 // max(need, 1))))
    return n


def _output_spec(out: Any) -> list[list[Any]]:
    return [[list(o.shape), str(o.dtype).removeprefix("torch.")] for o in observe.flatten_outputs(out)
            if isinstance(o, torch.Tensor)]


def _meta_output_spec(run: Run) -> list[list[Any]] | None:
    """The reference's output shapes from a forward on the meta device (no memory), None where it cannot run
    there."""
    from ..tasks import footprint

    fp = footprint.try_measure(run.task)
    return None if fp is None else [[list(shape), dtype] for shape, dtype in fp.output_spec]


def in_place(run: Run) -> bool:
    """Whether this run's timed CPU outputs are read where they lie (`remote_memory`) rather than handed over
    as sealed copies: on the CPU, where process_vm_readv works (`HTAM_TIMED_HANDOVER=sealed` forces the
    copies, as a host without it would have them)."""
    if run.device.type == "cuda" or os.environ.get("HTAM_TIMED_HANDOVER", "") == "sealed":
        return False
    if run.in_place is None:
        run.in_place = remote_memory.available()
    return run.in_place


def calibrate(run: Run, n: int = CALIBRATION_CALLS) -> list[float]:
    """The checker's clock around timed requests of a no-op, made before any candidate code is imported:
    the same inputs' shapes, the same perturbation, flush and hand-over of outputs shaped like the
    reference's. What a timed request costs beyond the call itself (ms per request)."""
    spec = _meta_output_spec(run)
    inputs = inp.make_inputs(run.task, run.device, run.seed + 97, "task")
    if spec is None:
        spec = _output_spec(reference_outputs(run, run.ref, inputs))
    run.sb.ask("noop_like", run.left(), outputs=spec)
    enc, ids = run.sb.upload(inputs, run.left())
    view = run.sb.shared_values(enc)
    del inputs
    gen = torch.Generator().manual_seed(run.seed + 98)
    walls = []
    for i in range(n):
        wall, msg = _timed_request(run, "__noop__", enc, view, gen, f"cal{i}")
        _let_go(run, msg, f"cal{i}")
        walls.append(wall)
    run.sb.free(ids, run.left())
    run.backend.release_flush()  # not needed again before the timed phase (issue 36)
    return walls


def _let_go(run: Run, msg: protocol.Message, out_id: str) -> None:
    """After a timed request whose output is not read again, outside the clock: its handed-over descriptors
    closed, the live output let go, and on a GPU the device copy kept under `out_id` released (kept until then:
    25 calibration copies ran an 80 GB H100 out of memory on KernelBench's 6 GiB ReLU)."""
    protocol._close_all(msg.fds)
    run.sb.ask("settle", run.left(), keep=None)
    if run.device.type == "cuda":
        run.sb.ask("release", run.left(), ids=[out_id], poison=False)


def _timed_request(run: Run, slot: str, enc: Any, view: Any, gen: Any, out_id: str,
                   change: list[tuple[int, Any]] | None = None) -> tuple[float, Any]:
    """One timed request, clocked here: the clock starts before this call's inputs change (they are
    revealed inside the window) and stops when the reply has arrived with the outputs handed over: sealed
    copies, or (`in_place`) outputs whose pages the checker has touched where they lie. `change`: this
    call's perturbation, drawn by the caller (which needed it first), else drawn here."""
    change = inp.perturbation(view, gen) if change is None else change
    on_gpu = run.device.type == "cuda"
    here = in_place(run)
    if on_gpu:
        torch.cuda.synchronize()
    else:  # the CPU's caches are the machine's: the checker flushes them, where no candidate can reach it
        run.backend.flush_cache()
    t0 = time.perf_counter_ns()
    inp.apply_perturbation(view, change)
    if on_gpu:
        torch.cuda.synchronize()  # the sandbox reads what the checker wrote
    msg = run.sb.request("timed", run.left(), slot=slot, inputs=enc, seal=True, out_id=out_id, flush=on_gpu,
                         in_place=here)
    if here:
        msg = _touch(run, msg)
    wall = (time.perf_counter_ns() - t0) / 1e6
    msg.body["change"] = change
    return wall, msg


def _described(run: Run, msg: protocol.Message) -> list[tuple[Any, list[int], int, int]]:
    """The outputs' (dtype, shape, address, bytes) from an in-place reply, validated."""
    found: list[tuple[Any, list[int], int, int]] = []
    value = msg.body.get("value")
    if value is None:
        return found
    try:
        protocol.decode_value(value, lambda d: found.append(protocol.check_addr(d)))
    except protocol.ProtocolError as exc:
        raise run.sb._violation(str(exc)) from exc
    return found


def _touch(run: Run, msg: protocol.Message) -> protocol.Message:
    """Inside the clock: fault in sampled pages of every output where it lies. An output that cannot be read
    there (memory mapped without access: a lazy output) is handed over as a sealed copy instead, still inside
    the clock, as every timed output was before."""
    pid = run.sb.proc.pid
    try:
        for _dtype, _shape, addr, nbytes in _described(run, msg):
            pages = remote_memory.page_count(addr, nbytes)
            picks = list(range(pages)) if pages <= remote_memory.TOUCH_PAGES else [0, pages - 1] + \
                _SECRET.sample(range(pages), remote_memory.TOUCH_PAGES)
            remote_memory.touch(pid, addr, nbytes, picks)
        msg.body["in_place"] = msg.body.get("value") is not None
        return msg
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.ENOSYS, errno.ESRCH):
            run.in_place = False  # no access to this sandbox at all: sealed copies from the next request on
    sealed = run.sb.request("export", run.left(), out_id="", last=True, hold=False)
    sealed.body.update({k: v for k, v in msg.body.items() if k not in ("value", "facts", "unsendable")})
    return sealed


def _read_in_place(run: Run, msg: protocol.Message) -> tuple[Any, list[dict[str, Any]], str | None]:
    """A re-checked timed output copied whole out of the sandbox, frozen meanwhile (so it is read as it was
    at return, whatever the candidate left running); a sealed copy where it cannot be read there."""
    facts = msg.body.get("facts")
    if not isinstance(facts, list):
        raise run.sb._violation("outputs without facts")
    if msg.body.get("value") is None:
        return None, facts, str(msg.body.get("unsendable") or "the output could not be handed back")
    pid = run.sb.proc.pid
    keep = {run.ref_sandbox.proc.pid} if run.ref_sandbox is not None else set()

    def read(desc: Any) -> Any:
        dtype, shape, addr, nbytes = protocol.check_addr(desc)
        own = torch.empty(shape, dtype=dtype)
        remote_memory.read_into(pid, addr, nbytes, own.data_ptr())
        run.sb.counts["outputs_read_bytes"] += nbytes
        return own

    try:
        with run.sb.paused(keep):
            value = protocol.decode_value(msg.body["value"], read)
        return value, facts, None
    except protocol.ProtocolError as exc:
        raise run.sb._violation(str(exc)) from exc
    except OSError:
        return run.sb.outputs(run.sb.request("export", run.left(), out_id="", last=True, hold=False))


def output_digest(value: Any, facts: list[dict[str, Any]]) -> str:
    """sha256 of what a candidate handed back (its facts, every tensor's dtype, shape and bytes) on the CPU.

    A re-checked timed output is read twice: as it was at return, compared with the reference then, and before the
    next re-check, to see whether it changed afterwards (work finished after return, a buffer a later call
    reused). When the second reading has the very bytes of the first, its comparison can only give the first's
    result, so the reference is not computed again for it: that was a redraw of the timed set, the replay of its
    perturbations and a forward per re-checked call (4-5 s per GiB on the 2-core VM; issue 36), where hashing
    both readings costs about 1.2 s per GiB each (sha256 with the CPU's SHA extensions). Any changed byte makes
    the digests differ (a collision of sha256 cannot be made), and then the output is judged against the reference
    as before."""
    h = hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode())
    for t in observe.flatten_outputs(value):
        if isinstance(t, torch.Tensor):
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            flat = t.detach().contiguous().reshape(-1)
            if flat.numel():
                h.update(memoryview(flat.view(torch.uint8).numpy()))
        else:
            h.update(repr(t).encode())
    return h.hexdigest()


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
    in advance. A re-checked call's output is compared as it was at return (a copy taken right after the
    request) and, before the next re-checked call or at the end, as it is then; every other output is let
    go right after its request, so the sandbox holds at most one kept output and one live one (issue 36).
    """

    def __init__(self, run: Run, plan: timing.TimingPlan, recheck: bool, calibration: list[float],
                 n_sets: int = 3, n_snapshots: int = 1, every_set: bool = False, slot: str = "main") -> None:
        self.run, self.plan, self.recheck, self.calibration = run, plan, recheck, calibration
        self.n_sets, self.n_snapshots, self.every_set, self.slot = n_sets, n_snapshots, every_set, slot
        self.chosen: set[int] = set()
        self.changes: list[list[tuple[int, Any]]] = []  # the perturbation of each call, to rebuild its inputs
        self.then: dict[int, correctness.OutputCheck] = {}  # re-checked calls: their output as at return
        self.then_digest: dict[int, str | None] = {}  # ... and the sha256 of its bytes (CPU)
        self.problems: list[tuple[str, str]] = []
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
        self.uploaded = [run.sb.upload(first, run.left())]
        del first
        self.uploaded += [run.sb.upload(self._draw(s), run.left()) for s in range(1, self.n)]
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

    def _reference_for(self, i: int, change: list[tuple[int, Any]] | None = None) -> Any:
        """The reference's outputs on the exact inputs of timed call i (its set, redrawn, and every change
        made to that set up to call i; `change`: call i's own, before it is made)."""
        inputs = self._draw(i % self.n)
        changes = self.changes + ([change] if change is not None else [])
        for j in range(i % self.n, i + 1, self.n):
            inp.apply_perturbation(inputs, changes[j])
        return reference_outputs(self.run, self.run.ref, inputs, reuse=False)

    def step(self, i: int) -> None:
        run, sb, device = self.run, self.run.sb, self.run.device
        s = i % self.n
        change = inp.perturbation(self.views[s], self.gen)
        ref_out = None
        if i in self.chosen:
            self._settle_kept()  # the earlier re-checked call is read again now: one kept output at a time
            # Its inputs are known before the call: the reference runs now, so that its inputs are gone before
            # the output is copied out (one full-size copy fewer held at once; issue 36).
            ref_out = self._reference_for(i, change)
        wall, msg = _timed_request(run, self.slot, self.encs[s], self.views[s], self.gen, f"sealed{i}", change)
        self.changes.append(msg.body.pop("change"))
        self.walls.append(wall)
        r = msg.body
        self.reported.append(_num(r.get("device_ms")))
        self.host.append(_num(r.get("host_ms")))
        self.outliving += int(r.get("threads_alive") or 0)
        if r.get("launches") == 0 and self.slot == "main" and run.job["mode"] == "evaluate":
            run.silent_calls.append(f"timed call {i}")
        if i not in self.chosen:
            _let_go(run, msg, f"sealed{i}")
            return
        if device.type == "cuda":
            protocol._close_all(msg.fds)
            at_return = sb.outputs(sb.request("export", run.left(), out_id=f"sealed{i}"))
        elif msg.body.get("in_place"):
            at_return = _read_in_place(run, msg)
        else:
            at_return = sb.outputs(msg)
        sb.ask("settle", run.left(), keep=f"timed{i}")  # the live output, read again later
        out, facts, prob = at_return
        del at_return
        self.then[i] = judge.compare(ref_out, out, facts, device, prob)
        self.then_digest[i] = output_digest(out, facts) if device.type == "cpu" and prob is None else None
        del out, ref_out
        sb.ask("release", run.left(), ids=[f"sealed{i}"], poison=False)
        free_cached(run)

    def _settle_kept(self) -> None:
        """Read the kept re-checked outputs again (as they are now) and judge them against how they were at
        return: incomplete then and right now is work after return; right then and wrong now, an output
        changed afterwards (a buffer reused by a later call)."""
        run, sb, device, n = self.run, self.run.sb, self.run.device, self.n
        for i in sorted(self.then):
            then, digest = self.then.pop(i), self.then_digest.pop(i, None)
            now = None
            if digest is not None:
                out, facts, prob = sb.outputs(sb.request("export", run.left(), out_id=f"timed{i}"))
                if prob is None and output_digest(out, facts) == digest:
                    now = then  # the very bytes judged at return: the same judgement, no second reference
                    sb.counts["rechecks_unchanged"] += 1
                del out
            if now is None:  # changed since its return (or not hashed): judged against the reference again
                ref_out = self._reference_for(i)  # before the copy below: its inputs are gone by then
                out, facts, prob = sb.outputs(sb.request("export", run.left(), out_id=f"timed{i}"))
                now = judge.compare(ref_out, out, facts, device, prob)
                del out, ref_out
                sb.counts["rechecks_recomputed"] += 1
            sb.ask("release", run.left(), ids=[f"timed{i}"], poison=False)
            free_cached(run)
            if not then.passed and not now.passed:
                self.problems.append(("timed_output_mismatch", f"timed call {i} (input set {i % n}): {then.detail}"))
            elif not then.passed:
                self.problems.append(("work_after_return", f"timed call {i}: its output was incomplete when "
                                      f"forward returned and was finished later ({then.detail})"))
            elif not now.passed:
                self.problems.append(("timed_output_mismatch", f"timed call {i} (input set {i % n}): its output "
                                      f"was right when the call returned and changed afterwards ({now.detail})"))

    def finish(self) -> tuple[dict[str, Any], list[tuple[str, str]], judge.WallClock]:
        """The statistics of record, what the re-checks found, and the checker's clock."""
        run, sb, device = self.run, self.run.sb, self.run.device
        t0 = time.perf_counter_ns()
        sb.ask("sync", run.left())
        wall = judge.WallClock(self.calibration, self.walls, self.reported, (time.perf_counter_ns() - t0) / 1e6)
        stats = timing.summarize(self.reported, self.host, self.warmup).as_dict()
        del self.views
        for _, ids in self.uploaded:  # the input sets go first: the re-checks below need room
            sb.free(ids, run.left())
        self._settle_kept()
        problems = self.problems
        if self.outliving:
            ended = int(sb.ask("threads_ended", run.left()).get("ended") or 0)
            if ended:
                problems.append(("work_after_return", f"{ended} thread(s) started inside timed calls were still "
                                 "running when forward returned and ended later"))
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
    (r_stats, r_problems, r_wall) = ref.finish()  # first: its input sets go before the candidate's re-checks
    (c_stats, c_problems, c_wall) = cand.finish()
    c_stats, r_stats = judge.settle_pair(c_stats, c_wall, r_stats, r_wall, run.device.type)
    return (c_stats, c_problems, c_wall), (r_stats, r_problems, r_wall)
