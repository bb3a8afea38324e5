"""Running the reference at a candidate size: on the meta device (FLOPs, bytes, ops counted), else on the CPU."""

from __future__ import annotations

import contextlib
import math
import sys
import time
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .analysis import Slot, _analyze, _is_int
from .budget import (
    ARG_REDUCE_ELEMS_PER_MS,
    BYTES_PER_MS,
    CPU_PROBE_MAX_BYTES,
    FLOPS_PER_MS,
    MS_PER_OP,
    OP_CAP,
    WINDOW_TAPS_PER_MS,
    SizeError,
    _TooManyOps,
)
from .record import encode


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
