"""The sandbox's server: the one process that imports and runs candidate code. Nothing it says is trusted.

Started as `python -m htam_agent.evaluation.sandbox --fd N` (`sandbox/__main__.py`; by the checker, never
by hand). It serves the checker's requests over a socket (`common/protocol.py`): import the candidate, build `ModelNew` with
the weights the checker sends, call it on input buffers the checker fills, time single calls, and hand
outputs back as sealed shared memory (CPU) or CUDA IPC handles. It never sees the reference model, its
outputs or the seeds the inputs were drawn from, and it writes no verdict: the checker judges what comes
back as data. Evidence only this process can gather (kernel launches, the sabotage runs, the ATen ops of
the forward, Python threads, replaced functions) is reported too; the checker treats it as evidence from
an untrusted party, never as a verdict.

Imports only torch and the standard library (plus the backend's own compiler front ends).
"""

from __future__ import annotations

import gc
import os
import socket
import sys
import threading
import time
import traceback
from typing import Any

_T_START = time.perf_counter()
import torch  # noqa: E402

from ..backends import get_backend  # noqa: E402
from ..common import gpu, observe, protocol  # noqa: E402
from ..common.containment import landlock, memory_cap, privileges  # noqa: E402
from ..common.observe import flatten_outputs  # noqa: E402
from . import build_cache, probe  # noqa: E402


def _warm_profiler() -> None:
    """The profiler's first use initialises Kineto: do it before the job, through the op trace itself."""
    observe.aten_ops(lambda: torch.zeros(2).add_(1))


_T_IMPORTED = time.perf_counter()


def classify_exception(exc: BaseException) -> dict[str, str]:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    low = text.lower()
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)) or "out of memory" in low or "can't allocate memory" in low:
        kind = "out_of_memory"
    elif "CompilationError" in type(exc).__name__ or "Error building extension" in text:
        kind = "compile_error"
    elif isinstance(exc, SystemExit):
        kind, text = "crashed", f"the candidate called exit({exc.code})"
    else:
        kind = "runtime_error"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith("candidate.py")]
    where = "; ".join(f"candidate.py line {f.lineno}: {f.line}" for f in frames[-2:])
    return {"kind": kind, "text": text[-8000:], "where": where}


def _storage_spans(values: list[Any]) -> list[tuple[int, int]]:
    spans = []
    for t in flatten_outputs(values):
        if isinstance(t, torch.Tensor) and t.numel() > 0:
            st = t.untyped_storage()
            spans.append((st.data_ptr(), st.data_ptr() + st.nbytes()))
    return spans


def _overlaps(a: list[Any], b: list[Any]) -> bool:
    return any(a0 < b1 and b0 < a1 for a0, a1 in _storage_spans(a) for b0, b1 in _storage_spans(b))


class Sandbox:
    """The candidate's process: state kept between the checker's requests."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.backend: Any = None
        self.device: Any = None
        self.module: Any = None
        self.cand_cls: Any = None
        self.probe = probe.KernelProbe()
        self.slots: dict[str, Any] = {"__noop__": lambda *xs: xs[0].clone() if xs else None}
        self.class_name = "ModelNew"
        self.buffers: dict[str, Any] = {}
        self._maps: dict[str, Any] = {}
        self.outputs: dict[str, Any] = {}
        self.last: Any = None
        self.last_held: list[Any] = []  # dense copies of the last timed output's tensors, described in place
        self.held: dict[str, list[Any]] = {}  # the same, of outputs kept by `settle`
        self.outliving: list[threading.Thread] = []
        self.snapshot: dict[str, Any] = {}
        self.nonce: Any = None

    # -- plumbing ------------------------------------------------------------------------------------
    def serve(self) -> None:
        protocol.send(self.sock, {"event": "ready", "pid": os.getpid(), "uid": os.getuid(),
                                  "imports_s": round(time.perf_counter() - _T_START, 3)})
        while True:
            try:
                msg = protocol.recv(self.sock)
            except EOFError:
                os._exit(0)
            gpu.job_arrived()  # a request: CUDA may be initialised from here on, never before
            op = msg.body.get("op")
            self.nonce = msg.body.get("nonce")  # events sent during this request echo it (_build_request)
            handler = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
            fds: list[int] = []
            try:
                if handler is None:
                    raise ValueError(f"unknown request {op!r}")
                reply = handler(msg.body, fds) or {}
                reply.setdefault("ok", True)
            except BaseException as exc:  # the candidate's failures are answers, not deaths
                fds.clear()
                reply = {"ok": False, "error": classify_exception(exc)}
            finally:
                for fd in msg.fds:
                    os.close(fd)
            reply["nonce"] = msg.body.get("nonce")
            protocol.send(self.sock, reply, fds)
            for fd in fds:
                os.close(fd)
            if op == "exit":
                os._exit(0)

    def _export(self, t: Any, fds: list[int]) -> dict[str, Any]:
        if t.device.type == "cuda":
            return protocol.export_cuda(t)
        return protocol.export_cpu_sealed(t, fds)

    def _decode(self, data: Any) -> Any:
        return protocol.decode_value(data, lambda ref: self.buffers[str(ref["buffer"])])

    def _encode_outputs(self, out: Any, fds: list[int], export: Any = None) -> dict[str, Any]:
        flat = flatten_outputs(out)
        facts = []
        for o in flat:
            if isinstance(o, torch.Tensor):
                facts.append({"tensor": True, "type": f"{type(o).__module__}.{type(o).__qualname__}",
                              "plain": type(o) is torch.Tensor, "device": o.device.type,
                              "strided": o.layout == torch.strided and not o.is_sparse,
                              "shape": list(o.shape), "dtype": protocol.dtype_name(o.dtype)})
            else:
                facts.append({"tensor": False, "type": type(o).__name__})

        def sealed(t: Any) -> dict[str, Any]:
            if type(t) is not torch.Tensor or t.layout != torch.strided or t.is_sparse:
                t = torch.Tensor.as_subclass(t.to_dense() if t.is_sparse else t, torch.Tensor)
            return self._export(t, fds)

        if export is not None:  # facts only (the caller describes the tensors itself)
            return {"facts": facts}
        try:
            value = protocol.encode_value(out, sealed)
        except protocol.ProtocolError as exc:
            return {"facts": facts, "value": None, "unsendable": str(exc)}
        return {"facts": facts, "value": value}

    def _build_request(self, event: dict[str, Any]) -> dict[str, Any]:
        """Ask the checker for a shared build (build_cache.py) while it waits for this request's reply."""
        try:
            protocol.send(self.sock, {**event, "nonce": self.nonce})
        except (TypeError, ValueError, protocol.ProtocolError) as exc:  # not JSON, too large: built here
            return {"build": {"private": True, "why": str(exc)[:200]}}
        msg = protocol.recv(self.sock)
        return {**msg.body, "fds": msg.fds}  # a shared build comes as a read-only descriptor of its module

    # -- set-up --------------------------------------------------------------------------------------
    def op_prepare(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        self.backend = get_backend(body["backend"])
        self.backend.prepare(body["build_root"], body.get("threads"), fast_build=body.get("fast_build", True))
        if body.get("fast_build", True) and self.backend.load_inline_builds:
            # build_root is this evaluation's private folder; shared builds come from the checker, verified
            build_cache.install(body["build_root"], request=self._build_request if body.get("shared_builds", True)
                                else None)
        self.device = self.backend.device(body.get("device_index", 0))
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        if body.get("probe", True):
            self.probe.install(self.backend.name)
        os.environ["TRITON_CACHE_DIR"] = os.path.join(body["build_root"], "triton")
        # torch.compile (a baseline timed here, or a candidate's own) writes its cache inside the box
        inductor = body.get("inductor_dir")  # a baseline's sandbox keeps torch.compile's cache across runs
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor or os.path.join(os.getcwd(), "inductor")
        # Before any candidate code: from here on this process (and all it starts) writes only to its
        # scratch folder and its build folder, and cannot signal or trace the checker.
        writable = [os.getcwd(), body["build_root"], *([inductor] if inductor else [])]
        confinement = landlock.restrict_writes(writable) if body.get(
            "landlock", True) else "landlock not requested"
        confinement += "; " + privileges.drop_capabilities()
        allowed = body.get("memory_allowance")  # the candidate's memory cap, set here before its code runs
        cap = memory_cap.cap_self(int(allowed)) if isinstance(allowed, int) and allowed > 0 else None
        return {"device": self.backend.device_info(), "confinement": confinement, "memory_cap": cap}

    def op_reference(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """A baseline's sandbox: the task's own `Model` at the job's size, built and timed like a candidate
        (only ever sent to a sandbox that loads no candidate)."""
        from ..tasks import load_task_source

        task = load_task_source(body["source"], body["path"], size=body["size"], check_inputs=False,
                                derived=body.get("derived"))
        self.cand_cls = task.module.Model
        return {}

    def op_load(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        import importlib.util

        self.snapshot = _snapshot()
        path = os.path.join(os.getcwd(), "candidate.py")
        with open(path, "w") as f:
            f.write(body["source"])
        t0 = time.perf_counter()
        spec = importlib.util.spec_from_file_location("htam_candidate", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules["htam_candidate"] = module
        spec.loader.exec_module(module)
        self.module = module
        cls = str(body.get("cls") or "ModelNew")  # "Model" when a baseline times the reference here
        self.cand_cls = getattr(module, cls, None)
        if self.cand_cls is None:
            raise TypeError(f"the candidate module defines no `{cls}`")
        return {"seconds": round(time.perf_counter() - t0, 3)}

    def op_alloc(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Buffers the checker fills: inputs, weights, init arguments (they live in this process)."""
        descs = {}
        for spec in body["buffers"]:
            bid, shape, dtype = str(spec["id"]), list(spec["shape"]), getattr(torch, spec["dtype"])
            if self.device.type == "cuda":
                t = torch.empty(shape, dtype=dtype, device=self.device)
                descs[bid] = protocol.export_cuda(t)
            else:
                t, descs[bid], m = protocol.new_cpu_shared(shape, dtype, fds)
                self._maps[bid] = m
            self.buffers[bid] = t
        return {"buffers": descs}

    def op_free(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        for bid in body["ids"]:
            self.buffers.pop(str(bid), None)
            self._maps.pop(str(bid), None)  # the mapping closes when the last view of it goes
        return {}

    def op_build(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        init = self._decode(body["init"])
        state = self._decode(body["state"])
        with torch.device(self.device):
            torch.manual_seed(int(body.get("seed", 0)))
            model = self.cand_cls(*init).to(self.device)
        cs = model.state_dict()
        loaded = bool(state) and state.keys() == cs.keys() and all(state[k].shape == cs[k].shape for k in state)
        if loaded:
            model.load_state_dict(state)
        self.slots[str(body["slot"])] = model
        return {"loaded_state": loaded}

    def op_drop_slot(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        self.slots.pop(str(body["slot"]), None)
        gc.collect()
        return {}

    # -- calls ---------------------------------------------------------------------------------------
    def op_call(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """One forward on the given buffers; the output is kept as `out_id` and handed back."""
        model = self.slots[str(body["slot"])]
        inputs = self._decode(body["inputs"])
        before, launched = threading.active_count(), self.probe.launches
        with torch.no_grad():
            out = model(*inputs)
        self.backend.synchronize()
        keep = {k: v for k, v in self.outputs.items() if k in body.get("against", [])}
        reply = self._encode_outputs(out, fds) if body.get("send", True) else {}
        reply["aliases_input"] = _overlaps([out], list(inputs))
        reply["aliases_earlier"] = [k for k, v in keep.items() if _overlaps([out], [v])]
        reply["threads_added"] = threading.active_count() - before
        reply["launches"] = self.probe.launches - launched
        self.outputs[str(body["out_id"])] = out
        return reply

    def op_export(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Hand back a kept output again (as it is now), or the last timed call's output (then kept)."""
        oid = str(body["out_id"])
        if body.get("last"):
            if not body.get("hold", True):  # a sealed copy of the last timed output, which `settle` handles
                return self._encode_outputs(self.last, fds)
            self.outputs[oid] = self.last
        return self._encode_outputs(self.outputs[oid], fds)

    def op_release(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        sizes, poisoned = [], 0
        for oid in body["ids"]:
            self.held.pop(str(oid), None)
            out = self.outputs.pop(str(oid), None)
            sizes += [t.untyped_storage().nbytes() for t in flatten_outputs(out) if isinstance(t, torch.Tensor)]
            del out
        if body.get("poison", True):
            # Blocks the size of the freed outputs, filled with NaN: an output allocated but never written
            # shows it (cheat pattern 1). `poison_below`: only blocks smaller than that (checker/phases.poison_below)
            below = body.get("poison_below")
            for n in sizes:
                if n >= 4 and not (isinstance(below, int) and n >= below):
                    t = torch.full((n // 4,), float("nan"), dtype=torch.float32, device=self.device)
                    del t
                    poisoned += n
        return {"poisoned_bytes": poisoned}

    def op_sync(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        self.backend.synchronize()
        return {}

    def op_flush(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Queue the cache flush before a timed call (a separate request: the checker's clock around the
        timed call then holds the call, not the flush)."""
        self.backend.synchronize()
        self.backend.flush_cache()
        return {}

    def op_warmup(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        model = self.slots[str(body["slot"])]
        sets = [self._decode(s) for s in body["sets"]]
        warm, t0 = 0, time.perf_counter()
        while warm < body["min"] or time.perf_counter() - t0 < body["seconds"]:
            with torch.no_grad():
                model(*sets[warm % len(sets)])
            self.backend.synchronize()
            warm += 1
            if warm >= 1000:
                break
        return {"warmup": warm, "est_ms": (time.perf_counter() - t0) * 1e3 / warm}

    def op_timed(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """One timed call, under the very protocol of `timing.time_calls` (synchronize, queue the flush,
        start, call, synchronize the device, stop), so a candidate and a baseline pay the same window. On the
        CPU the checker flushes the machine's caches itself before the request (`flush` false here): the
        flush is then beyond the candidate's reach and outside the checker's clock, which it would blur.

        With `seal`, the outputs are handed over inside this request: on the CPU as sealed memfds (their
        content is fixed when the reply leaves), on the GPU as a device copy made now and kept as `out_id`;
        with `in_place` (CPU) as where they lie, which the checker touches inside its clock and reads itself
        (checker/remote_memory.py).
        An output whose work is deferred to its first read (a lazily mapped page, a pending stream) is
        finished inside the checker's clock, or is caught stale."""
        model = self.slots[str(body["slot"])]
        inputs = self._decode(body["inputs"])
        self.last, self.last_held = None, []
        before, launched = set(threading.enumerate()), self.probe.launches
        self.backend.synchronize()
        if body.get("flush", True):  # the GPU's L2 is flushed here; on the CPU the checker flushes its caches
            self.backend.flush_cache()
        timer = self.backend.new_timer()
        h0 = time.perf_counter_ns()
        timer.start()
        with torch.no_grad():
            out = model(*inputs)
        timer.stop()  # synchronizes the whole device before the end stamp
        h1 = time.perf_counter_ns()
        self.last = out
        started = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        self.outliving.extend(started)
        reply: dict[str, Any] = {"device_ms": timer.elapsed_ms(), "host_ms": (h1 - h0) / 1e6,
                                 "threads_alive": len(started), "launches": self.probe.launches - launched}
        if body.get("seal"):
            if self.device.type == "cuda":
                self.outputs[str(body["out_id"])] = _device_copy(out)
                torch.cuda.synchronize()
            elif body.get("in_place"):  # where the outputs lie here: the checker reads them itself
                reply.update(self._describe_outputs(out))
            else:
                reply.update(self._encode_outputs(out, fds))
        return reply

    def _describe_outputs(self, out: Any) -> dict[str, Any]:
        """The outputs' facts and, per tensor, the address and length of its bytes in this process (a dense copy
        made first where a tensor is not contiguous, held with the output until `settle`)."""
        reply = self._encode_outputs(out, [], export=lambda t: None)
        held: list[Any] = []

        def where(t: Any) -> dict[str, Any]:
            t = torch.Tensor.as_subclass(t.to_dense() if t.is_sparse else t, torch.Tensor).detach()
            if not t.is_contiguous():
                t = t.contiguous()
            held.append(t)
            return {"kind": "cpu_addr", "addr": t.data_ptr(), "nbytes": t.numel() * t.element_size(),
                    "dtype": protocol.dtype_name(t.dtype), "shape": list(t.shape)}

        try:
            reply["value"] = protocol.encode_value(out, where)
        except protocol.ProtocolError as exc:
            reply.update(value=None, unsendable=str(exc))
        self.last_held = held
        return reply

    def op_settle(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """After a timed request, outside the checker's clock: keep the last output under `keep` (to be read
        again later) or let it go now, so that freeing a large output is in no timed request."""
        keep = body.get("keep")
        if keep:
            self.outputs[str(keep)] = self.last
            self.held[str(keep)] = self.last_held
        self.last, self.last_held = None, []
        return {}

    def op_threads_ended(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        ended = [t for t in self.outliving if not t.is_alive()]
        self.outliving.clear()
        return {"ended": len(ended)}

    # -- evidence ------------------------------------------------------------------------------------
    def op_probe(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        return {"calls": dict(self.probe.calls), "launches": self.probe.launches}

    def op_ops(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        model = self.slots[str(body["slot"])]
        inputs = self._decode(body["inputs"])
        with torch.no_grad():  # on the buffers themselves: they are freed after this request
            ops = observe.compute_ops(observe.aten_ops(lambda: model(*inputs)))
        return {"ops": sorted([list(o) for o in ops])}

    def op_sabotage(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """A normal call on the buffers, then one with the kernels' results poisoned ("nan") or replaced by
        a copy of their inputs ("identity"), on the very same tensors (so a cache keyed on them answers)."""
        model = self.slots[str(body["slot"])]
        inputs = self._decode(body["inputs"])
        self.probe.protect(inputs)
        self.probe.protect(list(model.parameters()) + list(model.buffers()))
        with torch.no_grad():
            first = model(*inputs)  # held through the sabotaged call (see below)
        self.backend.synchronize()
        # The identity sabotage sees what a launch wrote by its content changing. Were the normal call's outputs
        # freed, the caching allocator could hand their memory, holding the very values a kernel is about to
        # write, to the sabotaged call, and the write would go unseen. Held, they cannot be handed out; and
        # nothing the candidate may keep a reference to is modified.
        self.probe.mode, self.probe.replaced = body["mode"], 0
        try:
            with torch.no_grad():
                out = model(*inputs)
            self.backend.synchronize()
        except Exception as exc:  # the sabotaged results broke the forward: they were used
            return {"raised": type(exc).__name__, "replaced": self.probe.replaced}
        finally:
            self.probe.mode = None
        del first
        self.outputs[str(body["out_id"])] = out
        reply = self._encode_outputs(out, fds)
        reply["replaced"] = self.probe.replaced
        return reply

    def op_tamper(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        now = _snapshot()
        changed = [k for k, (obj, code) in self.snapshot.items()
                   if k not in now or now[k][0] is not obj or now[k][1] is not code]
        return {"changed": sorted(changed)}

    def op_compile_slot(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """torch.compile a slot (the torch.compile baseline) and run it once, so compilation is not timed."""
        compiled = torch.compile(self.slots[str(body["slot"])])
        with torch.no_grad():
            compiled(*self._decode(body["inputs"]))
        self.backend.synchronize()
        self.slots[str(body["compiled_slot"])] = compiled
        return {}

    def op_noop_like(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """The calibration's no-op returns fresh tensors shaped like the reference's outputs, so its round
        trip holds the same flush and the same hand-over as a timed call (set before any candidate code)."""
        spec = [(list(shape), getattr(torch, str(dtype))) for shape, dtype in body["outputs"]]

        def noop(*xs: Any) -> Any:
            outs = [torch.empty(shape, dtype=dtype, device=self.device) for shape, dtype in spec]
            return outs[0] if len(outs) == 1 else tuple(outs)

        self.slots["__noop__"] = noop
        return {}

    def op_empty_cache(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        gc.collect()
        self.backend.empty_cache()
        return {}

    def op_exit(self, body: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        return {}


def _device_copy(out: Any) -> Any:
    """A copy of every tensor of an output (as plain tensors), same nesting: what the output held now."""
    if isinstance(out, torch.Tensor):
        return torch.Tensor.as_subclass(out, torch.Tensor).detach().clone()
    if isinstance(out, (list, tuple)):
        return type(out)(_device_copy(o) for o in out)
    if isinstance(out, dict):
        return {k: _device_copy(v) for k, v in out.items()}
    return out


def _snapshot() -> dict[str, Any]:
    """Identities of the functions this process times and reports with: a tripwire for a candidate that
    replaces them (the checker's clock bounds the timings whatever happens here)."""
    objs: dict[str, Any] = {"time.perf_counter_ns": time.perf_counter_ns, "time.perf_counter": time.perf_counter,
                            "torch.cuda.synchronize": torch.cuda.synchronize,
                            "torch.cuda.Event.record": torch.cuda.Event.record,
                            "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
                            "torch.cuda.Event.synchronize": torch.cuda.Event.synchronize}
    for name, obj in vars(Sandbox).items():
        if callable(obj):
            objs[f"Sandbox.{name}"] = obj
    from ..backends import _devices

    for cls in (_devices.CudaTimer, _devices.CpuTimer, _devices.CudaDevice, _devices.CpuDevice):
        for name, obj in vars(cls).items():
            if callable(obj):
                objs[f"{cls.__name__}.{name}"] = obj
    for mod in (protocol, probe, observe):
        for name, obj in vars(mod).items():
            if callable(obj) and getattr(obj, "__module__", None) == mod.__name__:
                objs[f"{mod.__name__}.{name}"] = obj
    return {k: (v, getattr(v, "__code__", None)) for k, v in objs.items()}
