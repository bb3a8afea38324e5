"""Sizes for any KernelBench file: derive 'small' and 'alt' overrides when a file has no SMALL_SIZES / ALT_SIZES.

KernelBench files size their inputs for a GPU (a 6 GB ReLU input is common) and carry no size dicts, so the CPU
backend could not run them and the second-shape check (cheat pattern 12) had no second shape. This module finds
the module-level size globals a file's reference reads, scales them down for 'small' and nudges them to odd,
non-power-of-two values for 'alt', checking every candidate with a forward of the reference on the meta device.

What counts as a size global (`_slots`):
- a module-level name bound once, by a plain assignment whose right-hand side reads no other module global
  (`dim = 8192 * 2` is one, `bias_shape = (out_channels, 1, 1)` is not: it is recomputed from its inputs);
- read, directly or through module-level functions, classes and globals, by `get_inputs`, `get_init_inputs` or
  `Model` (found from the bytecode's global loads, so a constructor parameter of the same name does not count);
- an int, or a tuple/list of ints (each group of equal elements is one slot: `input_shape = (3, 240, 240)`);
- larger than its floor: 2 for names with a `batch` token, else 8. Smaller values are flags, axis indices or
  channel counts like RGB's 3, which buy nothing when shrunk and break the model when changed;
- not named like a structural hyper-parameter (`kernel`, `stride`, `pad(ding)`, `dilation`, `patch`, `window`,
  `layers`, `stages`, `ratio`, `factor` tokens): those describe the op, not the data, and the model's geometry
  depends on them staying as they are.

'small' shrinks greedily: the largest slot (not at its floor) is halved (divided by 4 or 8 while the cost is
far over budget), rounded down to a multiple of the fixed ints that divided it (groups, heads, kernel sizes),
and the move is kept when the reference still runs on the meta device. A move that fails is retried with its divisors and multiples halved along (channels with groups,
embedding with heads, sequence with its maximum); a slot whose moves all fail is frozen where it is. Shrinking
stops once a cost model says the forward fits `BUDGET_MS` on a 2-core CPU with at most `MAX_INPUT_BYTES` of
inputs. The cost model counts FLOPs (torch's flop counter), bytes read and written by every op, the number
of ops, and the pooling taps and arg-reduction elements that CPUs run slowly, all on the meta device, so the
choice depends on the file alone (and torch's version), never on how busy the machine is: the same file gets
the same sizes on every host. A real CPU forward at the chosen size is timed once (`time_forward`: 2-thread
wall clock, one thread's CPU time) and reported against `TARGET_MS`; it does not change the choice.

'alt' starts from 'small' and moves each slot to the nearest other odd value (v-1, v+1, v-3, ... for an even
v; v-2, v+2, ... for an odd one), else to a non-power-of-two multiple of its divisors, keeping each move the
reference accepts; it must differ from small.

Ops the meta device cannot run (data-dependent `.item()`, CPU-only kernels) fall back to building the model on
the CPU and moving it to meta, then to a real CPU forward once the inputs and weights are small enough.

Results are cached per file content (and evaluator version, torch version) as JSON under the evaluator's cache
folder; an unwritable cache only costs the derivation again. Imports only torch and the standard library.
"""

from __future__ import annotations

import contextlib
import dis
import hashlib
import json
import math
import os
import re
import sys
import time
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import threadsafe
from . import paths

VERSION = 3
SIZE_DICTS = {"small": "SMALL_SIZES", "alt": "ALT_SIZES"}
TARGET_MS = 50.0  # a small eager forward on a 2-core CPU should stay under this
BUDGET_MS = 20.0  # what the cost model aims at: a margin under TARGET_MS for a model that errs low
MAX_INPUT_BYTES = 16 << 20
FLOOR, BATCH_FLOOR = 8, 2
# Cost model of an eager forward on 2 cores of the development machine, set conservatively so that a forward
# the model calls BUDGET_MS really runs in under TARGET_MS. Measured there (uncontended, fastest of 20): a
# 128x1024 GEMM + BatchNorm, 268 MFLOP, 2.2 ms (~120 GFLOP/s); a conv + GroupNorm chain, 73 MFLOP, 1.5 ms;
# an elementwise op ~4-10 GB/s; a few microseconds per op, tens per nn.Module call.
FLOPS_PER_MS = 5e7
BYTES_PER_MS = 5e6
MS_PER_OP = 0.01
# Ops the FLOP and byte counts miss, measured there with one thread (KernelBench level 1): pooling does one
# compare or add per output element and kernel tap, ~5e5 per ms (MaxPool2d 4x4 over 32x32x64x64: 112 ms);
# argmax/argmin over a middle dimension ~2.5e5 input elements per ms (128x128x255: 17 ms).
WINDOW_TAPS_PER_MS = 5e5
ARG_REDUCE_ELEMS_PER_MS = 2.5e5
# Past these, a 'small' size would not be small: the file needs a SMALL_SIZES dict (or size globals) instead.
HARD_MS = 500 * BUDGET_MS
HARD_INPUT_BYTES = 256 << 20
CPU_PROBE_MAX_BYTES = 256 << 20
# A forward of more ops than this costs 10x the budget in op overhead alone: a probe stops counting there
# (an LSTM's 512 decomposed steps take ~80k ops and half a minute on meta) and the size shrinks on.
OP_CAP = int(10 * BUDGET_MS / MS_PER_OP)  # a model meta cannot run is run on the CPU only below this (inputs + weights)
MAX_PROBES = 400

_ROOTS = ("get_inputs", "get_init_inputs", "Model")
_NOT_SIZE_TOKENS = frozenset({"kernel", "stride", "strides", "pad", "padding", "dilation", "patch", "window",
                              "layers", "stages", "ratio", "factor"})
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"})
_memo: dict[str, dict[str, Any]] = {}


class SizeError(ValueError):
    """Sizes cannot be derived; the message names the file, the global and the fix."""


class _TooManyOps(BaseException):
    """Raised inside a probe's forward past OP_CAP ops (a BaseException, so a model's `except Exception`
    does not swallow it)."""


# ---------------------------------------------------------------------------------------------------------
# What a file reads


@dataclass(frozen=True)
class Slot:
    """One size that can change: an int global, or one group of equal elements of a tuple/list global."""

    name: str
    index: tuple[int, ...]  # () for an int global
    default: int
    floor: int
    order: int

    @property
    def label(self) -> str:
        return self.name if not self.index else f"{self.name}[{','.join(map(str, self.index))}]"


@dataclass
class _Assign:
    names: tuple[str, ...]
    code: types.CodeType
    deps: frozenset[str]
    order: int


@dataclass
class _Analysis:
    code: types.CodeType
    assigns: list[_Assign]
    slots: list[Slot]
    fixed: dict[str, Any]  # size-like globals read but kept, with their values
    notes: dict[str, str] = field(default_factory=dict)  # global -> why it is not scaled
    literals: dict[str, list[int]] = field(default_factory=dict)  # where -> int literals above FLOOR


def _code_reads(code: types.CodeType) -> set[str]:
    """Names a code object (and the code nested in it) loads as globals."""
    names: set[str] = set()
    for ins in dis.get_instructions(code):
        if ins.opname in _GLOBAL_LOADS and isinstance(ins.argval, str):
            names.add(ins.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_reads(const)
    return names


def _name_loads(node: Any) -> set[str]:
    import ast

    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _floor(name: str) -> int:
    return BATCH_FLOOR if "batch" in name.lower().split("_") or name.lower() in ("b", "bs", "n_batch") else FLOOR


def _not_size_reason(name: str) -> str | None:
    tokens = set(re.split(r"_+", name.lower()))
    hit = sorted(tokens & _NOT_SIZE_TOKENS)
    return f"named like a hyper-parameter ({hit[0]}), not a size" if hit else None


def _analyze(source: str, path: Path, module: types.ModuleType) -> _Analysis:
    """Find the size globals of an executed task module (see the module docstring for the rule)."""
    import ast

    tree = threadsafe.parse(source, str(path))
    code = compile(source, str(path), "exec")
    bound: dict[str, int] = {}  # how many top-level statements bind each name
    assigns: list[_Assign] = []
    class_bases: dict[str, set[str]] = {}
    for order, stmt in enumerate(tree.body):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = tuple(t.id for t in targets if isinstance(t, ast.Name))
            if stmt.value is not None and len(names) == len(targets):  # a = 1, a = b = 1
                segment = ast.get_source_segment(source, stmt)
                if segment:
                    assigns.append(_Assign(names, compile(segment, str(path), "exec"),
                                           frozenset(_name_loads(stmt.value)), order))
            elif (isinstance(stmt, ast.Assign) and len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List))
                  and isinstance(stmt.value, (ast.Tuple, ast.List)) and len(targets[0].elts) == len(stmt.value.elts)
                  and all(isinstance(t, ast.Name) for t in targets[0].elts)):
                # `height, width = 224, 224`: one assignment per name, so each can change alone
                for t, v in zip(targets[0].elts, stmt.value.elts, strict=True):
                    segment = ast.get_source_segment(source, v)
                    if segment:
                        assigns.append(_Assign((t.id,), compile(f"{t.id} = ({segment})", str(path), "exec"),
                                               frozenset(_name_loads(v)), order))
            bound_here = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound_here = {stmt.name}
            if isinstance(stmt, ast.ClassDef):
                class_bases[stmt.name] = set().union(*(_name_loads(b) for b in stmt.bases)) if stmt.bases else set()
        else:
            bound_here = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for n in bound_here:
            bound[n] = bound.get(n, 0) + 1
    assigned = {n for a in assigns for n in a.names}
    for a in assigns:
        a.deps = a.deps & assigned

    # Which globals the reference reads: bytecode of the top-level functions and classes, AST of assignments.
    code_of = {c.co_name: c for c in code.co_consts if isinstance(c, types.CodeType)}
    deps_of: dict[str, set[str]] = {}
    for a in assigns:
        for n in a.names:
            deps_of.setdefault(n, set()).update(a.deps)
    seen: set[str] = set()
    todo = [r for r in _ROOTS if r in module.__dict__]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        nxt: set[str] = set()
        if name in code_of:
            nxt |= _code_reads(code_of[name])
        nxt |= deps_of.get(name, set()) | class_bases.get(name, set())
        todo.extend(n for n in nxt if n not in seen and n in bound)

    slots: list[Slot] = []
    fixed: dict[str, Any] = {}
    notes: dict[str, str] = {}
    for a in assigns:
        for name in a.names:
            if name not in seen or name in _ROOTS:
                continue
            value = module.__dict__.get(name)
            ints = ([value] if _is_int(value) else list(value)
                    if isinstance(value, (tuple, list)) and value and all(_is_int(x) for x in value) else None)
            if ints is None:
                continue
            if a.deps:
                notes[name] = f"computed from {', '.join(sorted(a.deps))}: recomputed, not scaled"
                continue
            if bound.get(name, 0) > 1:
                fixed[name] = value
                notes[name] = "bound more than once at module level: kept"
                continue
            why = _not_size_reason(name)
            floor = _floor(name)
            if why is None and all(v <= floor for v in ints):
                why = f"{value} is at most {floor}: a flag, an index or a small count, kept"
            if why is not None:
                fixed[name] = value
                notes[name] = why
                continue
            if _is_int(value):
                slots.append(Slot(name, (), value, floor, len(slots)))
                continue
            groups: dict[int, list[int]] = {}
            for i, v in enumerate(ints):
                groups.setdefault(v, []).append(i)
            for v, idx in groups.items():
                if v > floor:
                    slots.append(Slot(name, tuple(idx), v, floor, len(slots)))
    literals: dict[str, list[int]] = {}
    if "get_inputs" in code_of:
        found = sorted({c for c in _code_consts(code_of["get_inputs"]) if _is_int(c) and c > FLOOR})
        if found:
            literals["get_inputs()"] = found
    for a in assigns:
        if a.deps and any(n in seen for n in a.names):
            found = sorted({c for c in _code_consts(a.code) if _is_int(c) and c > FLOOR})
            if found:
                literals[" = ".join(a.names)] = found
    return _Analysis(code, assigns, slots, fixed, notes, literals)


def _code_consts(code: types.CodeType) -> list[Any]:
    out: list[Any] = []
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out += _code_consts(c)
        elif isinstance(c, tuple):
            out += list(c)
        else:
            out.append(c)
    return out


# ---------------------------------------------------------------------------------------------------------
# Running the reference at a candidate size


@dataclass
class Probe:
    """What a forward of the reference at one size showed (status 'ok', 'invalid' or 'unchecked')."""

    status: str
    mode: str = "meta"
    error: str = ""
    inputs: list[str] = field(default_factory=list)
    input_bytes: int = 0
    param_bytes: int = 0
    flops: int = 0
    bytes_moved: int = 0
    ops: int = 0
    slow_ms: float = 0.0  # ops the FLOP and byte counts miss (pooling windows, arg-reductions)

    @property
    def est_ms(self) -> float:
        return self.flops / FLOPS_PER_MS + self.bytes_moved / BYTES_PER_MS + self.ops * MS_PER_OP + self.slow_ms

    def summary(self) -> dict[str, Any]:
        return {"status": self.status, "mode": self.mode, "error": self.error or None, "inputs": self.inputs,
                "input_bytes": self.input_bytes, "param_bytes": self.param_bytes, "flops": self.flops,
                "bytes_moved": self.bytes_moved, "ops": self.ops, "slow_ms": round(self.slow_ms, 3),
                "est_ms": round(self.est_ms, 3) if self.status == "ok" else None}


def _meta_unsupported(exc: BaseException) -> bool:
    """The meta device could not run an op (as opposed to the size being wrong for the model)."""
    return isinstance(exc, NotImplementedError) or "meta" in str(exc).lower()


def _err(exc: BaseException) -> str:
    msg = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {msg[:300]}"


def describe_input(x: Any) -> str:
    import torch

    if isinstance(x, torch.Tensor):
        return f"{str(x.dtype).replace('torch.', '')}{list(x.shape)}"
    return repr(x)[:40]


def _tensor_bytes(xs: Any) -> int:
    import torch

    return sum(x.numel() * x.element_size() for x in xs if isinstance(x, torch.Tensor))


def _counting_modes() -> tuple[Any, Any]:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves
    from torch.utils.flop_counter import FlopCounterMode

    class ByteCounter(TorchDispatchMode):
        """Bytes read and written by every non-view op, the number of ops, and the time of the ops that FLOPs
        and bytes misrepresent on a CPU (see WINDOW_TAPS_PER_MS)."""

        def __init__(self) -> None:
            super().__init__()
            self.bytes = 0
            self.ops = 0
            self.slow_ms = 0.0

        def __torch_dispatch__(self, func, types_, args=(), kwargs=None):  # noqa: ANN001
            out = func(*args, **(kwargs or {}))
            if not getattr(func, "is_view", False):
                self.ops += 1
                if self.ops > OP_CAP:
                    raise _TooManyOps()
                self.bytes += _tensor_bytes(tree_leaves((args, kwargs or {}, out)))
                op = str(getattr(func, "overloadpacket", ""))
                if ("pool" in op and "adaptive" not in op and "backward" not in op and len(args) > 1
                        and isinstance(args[1], (list, tuple)) and all(_is_int(k) for k in args[1])):
                    first = next((t for t in tree_leaves(out) if isinstance(t, torch.Tensor)), None)
                    if first is not None:
                        self.slow_ms += first.numel() * math.prod(args[1]) / WINDOW_TAPS_PER_MS
                elif op in ("aten.argmax", "aten.argmin") and args and isinstance(args[0], torch.Tensor):
                    self.slow_ms += args[0].numel() / ARG_REDUCE_ELEMS_PER_MS
            return out

    return FlopCounterMode(display=False), ByteCounter()


@contextlib.contextmanager
def _quiet_and_seeded(seed: int = 0) -> Iterator[None]:
    """Seeded, warning-free, grad-free; the caller's RNG states, thread count and stdout are left as they were."""
    import random

    import torch

    py_state = random.getstate()
    np_mod = sys.modules.get("numpy")
    np_state = np_mod.random.get_state() if np_mod is not None else None
    threads = torch.get_num_threads()
    with warnings.catch_warnings(), torch.random.fork_rng(devices=[]), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.manual_seed(seed)
        random.seed(seed)
        try:
            yield
        finally:
            random.setstate(py_state)
            if np_state is not None:
                np_mod.random.set_state(np_state)
            torch.set_num_threads(threads)


class _Deriver:
    """Derivation state for one file: its analysis, and probes of the reference at candidate sizes."""

    def __init__(self, source: str, path: Path) -> None:
        self.source, self.path = source, path
        self.probes = 0
        self.code = compile(source, str(path), "exec")
        base = self._exec()
        self.defaults = dict(base.__dict__)
        self.analysis = _analyze(source, path, base)

    # -- modules
    def _exec(self) -> types.ModuleType:
        name = f"htam_sizes_{abs(hash(self.path))}_{self.probes}"
        module = types.ModuleType(name)
        module.__file__ = str(self.path)
        sys.modules[name] = module
        try:
            with _quiet_and_seeded():
                exec(self.code, module.__dict__)
        except Exception as exc:
            raise SizeError(f"{self.path}: executing the task file failed: {_err(exc)}") from exc
        finally:
            sys.modules.pop(name, None)
        return module

    def overrides_for(self, values: dict[Slot, int]) -> tuple[types.ModuleType, dict[str, Any]]:
        """A fresh module at these slot values, and the overrides (size globals plus the globals computed
        from them) that `tasks._apply_size` sets to reproduce it."""
        module = self._exec()
        base: dict[str, Any] = {}
        for slot, v in values.items():
            if v == slot.default:
                continue
            if not slot.index:
                base[slot.name] = v
            else:
                cur = list(base.get(slot.name, self.defaults[slot.name]))
                for i in slot.index:
                    cur[i] = v
                base[slot.name] = type(self.defaults[slot.name])(cur)
        module.__dict__.update(base)
        overrides = dict(base)
        changed = set(base)
        for a in self.analysis.assigns:
            if a.deps & changed:
                with _quiet_and_seeded():
                    exec(a.code, module.__dict__)
                for n in a.names:
                    overrides[n] = module.__dict__[n]
                    changed.add(n)
        encode(overrides)  # raises TypeError when a recomputed global cannot be recorded
        return module, overrides

    # -- probes
    def probe(self, values: dict[Slot, int]) -> Probe:
        import torch

        self.probes += 1
        try:
            module, _ = self.overrides_for(values)
        except Exception as exc:
            return Probe("invalid", error=f"recomputing the globals failed: {_err(exc)}")
        gii = getattr(module, "get_init_inputs", None)
        with _quiet_and_seeded():
            try:
                with torch.device("meta"):
                    init = list(gii()) if gii else []
                    inputs = list(module.get_inputs())
            except Exception as exc:
                return Probe("invalid", error=f"get_inputs()/get_init_inputs() on the meta device: {_err(exc)}")
            p = Probe("ok", inputs=[describe_input(x) for x in inputs], input_bytes=_tensor_bytes(inputs))
            try:
                with torch.device("meta"):
                    model = module.Model(*init)
            except Exception as exc:
                if not _meta_unsupported(exc):
                    return Probe("invalid", error=f"Model(*get_init_inputs()): {_err(exc)}", inputs=p.inputs)
                p.mode = "cpu-built"
                try:
                    model = module.Model(*init).to("meta")
                except Exception as exc2:
                    return Probe("invalid", mode="cpu-built", error=f"Model(*get_init_inputs()): {_err(exc2)}",
                                 inputs=p.inputs)
            p.param_bytes = _tensor_bytes(list(model.parameters()) + list(model.buffers()))
            flop_mode, byte_mode = _counting_modes()
            try:
                with flop_mode, byte_mode:
                    model(*inputs)
            except _TooManyOps:
                p.status, p.error = "unchecked", f"stopped after {OP_CAP} ops: over budget by the op count alone"
                return p
            except Exception as exc:
                if not _meta_unsupported(exc):
                    return _invalid(p, f"forward: {_err(exc)}")
                if p.input_bytes + p.param_bytes > CPU_PROBE_MAX_BYTES:
                    p.status, p.error = "unchecked", f"the meta device cannot run the forward ({_err(exc)})"
                    return p
                return self._cpu_probe(module, p)
            p.flops, p.bytes_moved, p.ops = flop_mode.get_total_flops(), byte_mode.bytes, byte_mode.ops
            p.slow_ms = byte_mode.slow_ms
            return p

    def _cpu_probe(self, module: types.ModuleType, p: Probe) -> Probe:
        """The forward on the CPU, for a model the meta device cannot run (small enough by then)."""
        p.mode = "cpu"
        gii = getattr(module, "get_init_inputs", None)
        try:
            init = list(gii()) if gii else []
            model = module.Model(*init)
            inputs = list(module.get_inputs())
            flop_mode, byte_mode = _counting_modes()
            with flop_mode, byte_mode:
                model(*inputs)
        except _TooManyOps:
            p.status, p.error = "unchecked", f"stopped after {OP_CAP} ops: over budget by the op count alone"
            return p
        except Exception as exc:
            return _invalid(p, f"forward on the CPU: {_err(exc)}")
        p.flops, p.bytes_moved, p.ops = flop_mode.get_total_flops(), byte_mode.bytes, byte_mode.ops
        p.slow_ms = byte_mode.slow_ms
        return p

    def measure(self, values: dict[Slot, int]) -> tuple[float | None, float | None, str | None]:
        """A real eager forward on the CPU at these sizes, timed by `time_forward`: (wall ms with 2 threads,
        CPU ms of one thread, error)."""
        module, _ = self.overrides_for(values)
        gii = getattr(module, "get_init_inputs", None)
        with _quiet_and_seeded():
            try:
                model = module.Model(*(list(gii()) if gii else []))
                wall, cpu = time_forward(model, list(module.get_inputs()))
            except Exception as exc:
                return None, None, _err(exc)
        return wall, cpu, None


def time_forward(model: Any, inputs: list[Any], repeats: int = 20, max_s: float = 2.0) -> tuple[float, float]:
    """(wall ms, CPU ms): the fastest of up to `repeats` forwards (at most `max_s` seconds of them, after a
    warm-up) by wall clock with 2 threads, and by the thread's CPU time with one thread.

    Both are minima, because a shared machine only adds time. The one-thread CPU time counts the work itself,
    whatever else runs; it bounds from above what a dedicated 2-core host takes, so it is the robust figure
    on a loaded machine, where the 2-thread wall time waits for the slower, descheduled thread.
    """
    import torch

    threads = torch.get_num_threads()
    out = []
    try:
        with torch.no_grad():
            for n, clock in ((2, time.perf_counter), (1, time.thread_time)):
                torch.set_num_threads(n)
                model(*inputs)
                times: list[float] = []
                while len(times) < repeats and sum(times) < max_s * 1e3:
                    t0 = clock()
                    model(*inputs)
                    times.append((clock() - t0) * 1e3)
                out.append(min(times))
    finally:
        torch.set_num_threads(threads)
    return out[0], out[1]


def _invalid(p: Probe, error: str) -> Probe:
    p.status, p.error = "invalid", error
    return p


# ---------------------------------------------------------------------------------------------------------
# Choosing small and alt


def _fits(p: Probe) -> bool:
    return p.status == "ok" and p.est_ms <= BUDGET_MS and p.input_bytes <= MAX_INPUT_BYTES


def _divisors_among(v: int, values: list[int]) -> int:
    """lcm of the values (> 1) that divide v: what a multiple must keep to stay divisible by the same."""
    g = 1
    for u in values:
        if u > 1 and v % u == 0:
            g = g * u // math.gcd(g, u)
    return g


def _fixed_ints(analysis: _Analysis) -> list[int]:
    out: list[int] = []
    for v in analysis.fixed.values():
        out.extend([v] if _is_int(v) else [x for x in v if _is_int(x)])
    return out


def _halvings(slot: Slot, cur: dict[Slot, int], live: list[Slot], fixed: list[int],
              step: int = 2) -> list[dict[Slot, int]]:
    """Moves that divide one slot by `step` (then by 2, if `step` is larger): to a multiple of the fixed ints
    that divide it, plainly, then jointly with the live slots that divide it or that it divides (channels
    with groups, embedding with heads)."""
    v = cur[slot]
    g = _divisors_among(slot.default, fixed)
    partners = [s for s in live if s != slot and cur[s] > s.floor and (v % cur[s] == 0 or cur[s] % v == 0)]
    moves: list[dict[Slot, int]] = []
    for div in dict.fromkeys((step, 2)):
        target = max(slot.floor, v // div)
        if target >= v:
            continue
        candidates = [{slot: (target // g) * g}] if g > 1 and slot.floor <= (target // g) * g < v else []
        candidates.append({slot: target})
        if partners:
            candidates.append({slot: target, **{s: max(s.floor, cur[s] // div) for s in partners}})
        moves += [m for m in candidates if m not in moves]
    return moves


def _odd_values(slot: Slot, cur: dict[Slot, int], fixed: list[int], others: list[int]) -> list[int]:
    """Alt values for a slot, nearest first: odd neighbours, then non-power-of-two multiples of the fixed ints
    that divide it (groups, heads), then of every other size that divides it."""
    v = cur[slot]
    out: list[int] = [c for d in range(1, 7) for c in (v - d, v + d) if c > 1 and c % 2 == 1]  # v±1.. or v±2..
    for g in dict.fromkeys((_divisors_among(v, fixed), _divisors_among(v, fixed + others))):
        if g <= 1:
            continue
        k = v // g
        for k2 in sorted({k - 1, k + 1, k - 2, k + 2, k + 3}, key=lambda x: (x % 2 == 0, abs(x - k))):
            c = g * k2
            if k2 > 0 and c != v and c > 1 and (c & (c - 1)) != 0 and c not in out:
                out.append(c)
    return out


def _shrink(d: _Deriver, p: Probe) -> tuple[dict[Slot, int], Probe, list[str], dict[str, str]]:
    """Greedy halving from the default size (whose probe is `p`) until the cost model says it fits."""
    slots = d.analysis.slots
    cur = {s: s.default for s in slots}
    steps: list[str] = []
    frozen: dict[str, str] = {}
    fixed = _fixed_ints(d.analysis)
    while not _fits(p) and d.probes < MAX_PROBES:
        live = [s for s in slots if s.label not in frozen and cur[s] > s.floor]
        live.sort(key=lambda s: (-cur[s], s.order))  # largest first: shapes shrink evenly
        # Far over budget, larger steps: fewer probes at the sizes where a meta forward is slowest (an LSTM's
        # 512 steps), and never a coarser step near the budget.
        over = p.est_ms / BUDGET_MS if p.status == "ok" else 0.0
        step = 8 if over > 512 else 4 if over > 32 else 2
        moved = False
        for slot in live:
            last = ""
            for move in _halvings(slot, cur, live, fixed, step):
                q = d.probe({**cur, **move})
                if q.status != "invalid":
                    cur.update(move)
                    p, moved = q, True
                    steps.append(", ".join(f"{s.label}->{v}" for s, v in move.items()))
                    break
                last = f"{', '.join(f'{s.label}={v}' for s, v in move.items())}: {q.error}"
            if moved:
                break
            frozen[slot.label] = f"kept at {cur[slot]}: {last}"
        if not moved:
            break
    return cur, p, steps, frozen


def _alter(d: _Deriver, small: dict[Slot, int]) -> tuple[dict[Slot, int], Probe | None, list[str]]:
    """Move each slot, in source order, to the first alt value the reference accepts; a slot no value fits
    alone moves together with the slots of equal value (a loss whose targets must match the batch)."""
    cur = dict(small)
    p: Probe | None = None
    tried: list[str] = []
    fixed = _fixed_ints(d.analysis)
    slots = d.analysis.slots
    for slot in slots:
        if cur[slot] != small[slot]:
            continue  # moved already, together with an equal one
        others = [cur[s] for s in slots if s != slot]
        equal = [s for s in slots if s != slot and cur[s] == cur[slot]]
        values = _odd_values(slot, cur, fixed, others)
        moves = [{slot: v} for v in values[:10]] + [{slot: v, **{s: v for s in equal}} for v in values[:4] if equal]
        for move in moves:
            if d.probes >= MAX_PROBES:
                break
            q = d.probe({**cur, **move})
            if q.status == "ok" and q.input_bytes <= 2 * MAX_INPUT_BYTES:
                cur.update(move)
                p = q
                break
            tried.append(f"{', '.join(f'{s.label}={v}' for s, v in move.items())}: {q.error or q.status}")
    return cur, p, tried


def _size_record(d: _Deriver, values: dict[Slot, int], p: Probe, why: str, measure: bool) -> dict[str, Any]:
    _, overrides = d.overrides_for(values)
    rec: dict[str, Any] = {
        "overrides": encode(overrides),
        "changed": {s.label: [s.default, v] for s, v in values.items() if v != s.default},
        **{k: v for k, v in p.summary().items() if k != "status"},
        "cpu_ms": None, "cpu1_ms": None, "cpu_error": None, "why": why,
    }
    if measure:
        wall, cpu, rec["cpu_error"] = d.measure(values)
        if wall is not None and cpu is not None:
            rec["cpu_ms"], rec["cpu1_ms"] = round(wall, 3), round(cpu, 3)
            if min(wall, cpu) > TARGET_MS:
                rec["why"] += (f" Measured {min(wall, cpu):.0f} ms on the CPU: over the {TARGET_MS:.0f} ms "
                               "target.")
    return rec


def _suggest(path: Path, dict_name: str, names: list[str]) -> str:
    if not names:
        return (f"make the input sizes module-level globals that get_inputs() reads, and add "
                f"{dict_name} = {{'<global>': value, ...}} to {path}")
    inner = ", ".join(f"'{n}': ..." for n in dict.fromkeys(names))
    return f"add {dict_name} = {{{inner}}} to {path}"


def _derive(source: str, path: Path, measure: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    d = _Deriver(source, path)
    a = d.analysis
    report: dict[str, Any] = {
        "version": VERSION, "path": str(path), "source_sha256": hashlib.sha256(source.encode()).hexdigest(),
        "slots": [{"global": s.label, "default": s.default, "floor": s.floor} for s in a.slots],
        "kept": {n: a.notes[n] for n in a.notes},
        "default": None, "small": None, "alt": None, "problems": {"small": None, "alt": None},
    }
    default_probe = d.probe({s: s.default for s in a.slots})
    report["default"] = default_probe.summary()
    if default_probe.status == "invalid":
        msg = (f"{path}: the reference does not run at the file's own sizes ({default_probe.error}); "
               "fix the file, then sizes can be derived")
        report["problems"] = {"small": msg, "alt": msg}
        report["seconds"] = round(time.perf_counter() - t0, 3)
        return report
    names = [s.name for s in a.slots]
    small, p, steps, frozen = _shrink(d, default_probe)
    held = "; ".join(f"{k} {v}" for k, v in frozen.items()) or (
        "every size global is at its floor" if a.slots else
        "get_inputs(), get_init_inputs() and Model read no module-level size global: the sizes are literals")
    if a.literals:
        held += "; literal sizes the derivation cannot change: " + "; ".join(
            f"{where}: {', '.join(map(str, vals))}" for where, vals in a.literals.items())
    if p.status == "ok" and p.est_ms <= HARD_MS and p.input_bytes <= HARD_INPUT_BYTES:
        if not steps:
            why = "The default size already fits the budget."
        else:
            why = (f"Halved the largest size globals until the cost model gave "
                   f"{p.est_ms:.1f} ms (budget {BUDGET_MS:.0f} ms) and {p.input_bytes / 2**20:.2f} MiB of inputs "
                   f"(at most {MAX_INPUT_BYTES >> 20} MiB); checked on {p.mode}.")
        if not _fits(p):
            why = (f"Over budget: the smallest valid size found costs {p.est_ms:.1f} ms by the cost model and "
                   f"{p.input_bytes / 2**20:.2f} MiB of inputs ({held}). To go lower, "
                   f"{_suggest(path, 'SMALL_SIZES', names)}.")
        report["small"] = _size_record(d, small, p, why, measure)
        report["small"]["steps"] = steps
        report["small"]["kept_at"] = frozen
    else:
        cause = (p.error if p.status != "ok" else
                 f"the smallest valid size found costs {p.est_ms:.0f} ms by the cost model and "
                 f"{p.input_bytes / 2**20:.1f} MiB of inputs: {held}")
        report["problems"]["small"] = (f"{path}: no 'small' size could be derived ({cause}); "
                                       f"{_suggest(path, 'SMALL_SIZES', names)}")
    if report["small"] is not None:
        if not a.slots:
            report["problems"]["alt"] = (f"{path}: no 'alt' size: get_inputs(), get_init_inputs() and Model read "
                                         f"no module-level size global to vary; {_suggest(path, 'ALT_SIZES', names)}")
        else:
            alt, pa, tried = _alter(d, small)
            if pa is None or alt == small:
                report["problems"]["alt"] = (
                    f"{path}: no 'alt' size: no size global could move to another value the reference accepts "
                    f"({'; '.join(tried[:4])}); {_suggest(path, 'ALT_SIZES', names)}")
            else:
                odd = [s.label for s in a.slots if alt[s] != small[s] and alt[s] % 2 == 1]
                even = [s.label for s in a.slots if alt[s] != small[s] and alt[s] % 2 == 0]
                why = (f"Moved {len(odd) + len(even)} of {len(a.slots)} size globals off the small size"
                       + (f", to odd values: {', '.join(odd)}" if odd else "")
                       + (f"; to non-power-of-two multiples of their divisors: {', '.join(even)}" if even else "")
                       + (f"; kept {', '.join(s.label for s in a.slots if alt[s] == small[s])} (no other value "
                          "ran)" if any(alt[s] == small[s] for s in a.slots) else "")
                       + f"; checked on {pa.mode}.")
                report["alt"] = _size_record(d, alt, pa, why, measure)
    report["probes"] = d.probes
    report["seconds"] = round(time.perf_counter() - t0, 3)
    return report


# ---------------------------------------------------------------------------------------------------------
# Recording overrides as JSON


def encode(value: Any) -> Any:
    """JSON-able form of an override value (tuples are tagged, so they come back as tuples)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        if "__tuple__" in value:
            raise TypeError("a dict with the key '__tuple__' cannot be recorded")
        return {k: encode(v) for k, v in value.items()}
    raise TypeError(f"a {type(value).__name__} global cannot be recorded as a size override")


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"__tuple__"}:
            return tuple(decode(v) for v in value["__tuple__"])
        return {k: decode(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------------------------------------
# Public API


def cache_dir() -> Path:
    """`HTAM_SIZES_DIR`, else `sizes/` under the evaluator's cache root."""
    return Path(os.environ.get("HTAM_SIZES_DIR") or paths.cache_root() / "sizes").expanduser()


def _key(source: str) -> str:
    import torch

    return hashlib.sha256(f"{VERSION}\0{torch.__version__}\0{source}".encode()).hexdigest()


def _read_cache(key: str, source: str) -> dict[str, Any] | None:
    try:
        report = json.loads((cache_dir() / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    ok = (isinstance(report, dict) and report.get("version") == VERSION
          and report.get("source_sha256") == hashlib.sha256(source.encode()).hexdigest()
          and all(isinstance(report.get(s), (dict, type(None))) for s in ("small", "alt")))
    return report if ok else None


def _write_cache(key: str, report: dict[str, Any]) -> None:
    d = cache_dir()
    tmp = d / f".{key}.{os.getpid()}.tmp"
    try:
        d.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(report, indent=1, sort_keys=True))
        os.replace(tmp, d / f"{key}.json")
    except OSError:  # a read-only or full cache only costs the derivation next time
        with contextlib.suppress(OSError):
            tmp.unlink()


def derive_sizes(source: str, path: Path | str = "<task>", *, use_cache: bool = True,
                 measure: bool = True) -> dict[str, Any]:
    """The derivation report of a task source (cached): 'small'/'alt' records with their overrides, input
    shapes, estimated and measured cost and why they were chosen, or 'problems' saying why not.

    Explicit dicts are not consulted here: callers (`tasks`) let SMALL_SIZES / ALT_SIZES win.
    `use_cache=False` derives afresh (and refreshes the cache); `measure=False` skips the timed CPU forwards
    (a cached report without them serves it, one with them serves both).
    """
    path = Path(path)
    key = _key(source)
    if use_cache:
        hit = _memo.get(key) or _read_cache(key, source)
        if hit is not None and (hit.get("measured") or not measure):
            _memo[key] = hit
            return {**hit, "path": str(path), "cached": True}
    report = _derive(source, path, measure)
    report["measured"] = measure
    _memo[key] = report
    _write_cache(key, report)
    return {**report, "cached": False}


def explicit_dicts(source: str, path: Path | str = "<task>") -> set[str]:
    """Which of SMALL_SIZES / ALT_SIZES a source assigns at module level (found without running it)."""
    import ast

    try:
        tree = threadsafe.parse(source, str(path))
    except SyntaxError:
        return set()
    names = set()
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
            stmt, ast.AnnAssign) else []
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {size for size, dict_name in SIZE_DICTS.items() if dict_name in names}


def derived_overrides(source: str, path: Path | str = "<task>", *, use_cache: bool = True) -> dict[str, Any]:
    """{'small': overrides | None, 'alt': overrides | None, 'problems': {...}} in JSON form, for a job file:
    a parent process derives once and the worker applies them (`tasks.load_task_source(derived=...)`)."""
    report = derive_sizes(source, path, use_cache=use_cache, measure=False)
    return {"small": report["small"]["overrides"] if report["small"] else None,
            "alt": report["alt"]["overrides"] if report["alt"] else None,
            "problems": dict(report["problems"])}


def overrides_from(derived: dict[str, Any], size: str, path: Path | str) -> dict[str, Any]:
    """The decoded overrides of one derived size, or SizeError naming the dict to add."""
    enc = derived.get(size)
    if enc is None:
        problem = (derived.get("problems") or {}).get(size)
        raise SizeError(problem or f"{path}: no '{size}' size; add {SIZE_DICTS[size]} = {{...}} to {path}")
    return decode(enc)


def has_size(task_source: str, size: str, path: Path | str = "<task>") -> bool:
    """Whether a task source has `size`: 'default' always; 'small'/'alt' when the file defines the dict or
    the size can be derived (derivation is cached, so asking again is cheap)."""
    if size == "default":
        return True
    if size not in SIZE_DICTS:
        return False
    if size in explicit_dicts(task_source, path):
        return True
    try:
        return derived_overrides(task_source, path).get(size) is not None
    except SizeError:
        return False
