"""The sandbox's launch probe: is the candidate's own kernel what computes the result? (cheat patterns 10, 11)

It runs inside the sandbox, where the candidate's kernels are:
- launches: every kernel entry point (functions of `load_inline` modules, NVRTC kernels from
  `torch.cuda._compile_kernel`, Triton `JITFunction`s) is wrapped and counted; a forward that launches
  none of them is not a kernel;
- sabotage: extra forwards in which every result our kernels produce is overwritten with NaN, then (the
  identity sabotage) replaced by a copy of the kernel's own input. Each output must change; an output that
  still matches the reference was computed without the kernel (a copy kernel's output stays right when it
  is replaced by its input: it computes nothing).
The static checks live in the checker (`checker/static.py`); the ATen op trace both sides take
(`reference_ops`) in `common/observe.py`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from ..common import observe


class KernelProbe:
    """Counts launches of the candidate's kernels; in sabotage mode poisons what they produce."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.mode: str | None = None  # None, "nan" (poison results) or "identity" (results := their inputs)
        self.replaced = 0  # results the identity sabotage replaced
        self.protected: set[int] = set()  # storage pointers never to poison (inputs, parameters)

    @property
    def sabotage(self) -> bool:
        return self.mode is not None

    @sabotage.setter
    def sabotage(self, on: bool) -> None:
        self.mode = "nan" if on else None

    # -- installation (before the candidate is imported) ---------------------------------------------
    def install(self, backend: str) -> None:
        self._wrap_load_inline()
        if backend == "cuda":
            self._wrap_nvrtc()
        if backend == "triton":
            self._wrap_triton()

    def _wrap_load_inline(self) -> None:
        import torch.utils.cpp_extension as ext

        for fname in ("load_inline", "load"):
            original = getattr(ext, fname)

            def loader(*args: Any, _orig: Callable = original, **kwargs: Any) -> Any:
                module = _orig(*args, **kwargs)
                if module is not None and kwargs.get("is_python_module", True):
                    self.wrap_module(module)
                return module

            setattr(ext, fname, loader)

    def wrap_module(self, module: Any) -> None:
        for name in dir(module):
            if name.startswith("_"):
                continue
            fn = getattr(module, name)
            if callable(fn) and type(fn).__name__ in ("builtin_function_or_method", "PyCapsule"):
                setattr(module, name, self._wrap(f"{getattr(module, '__name__', 'ext')}.{name}", fn))

    def _wrap(self, label: str, fn: Callable) -> Callable:
        probe = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            probe.calls[label] += 1
            before = probe.before_launch([*args, *kwargs.values()])
            result = fn(*args, **kwargs)
            if probe.mode == "nan":
                probe.poison([result, *args, *kwargs.values()])
            elif probe.mode == "identity":
                probe.identity(before, result)
            return result

        wrapper.__name__ = getattr(fn, "__name__", label)
        wrapper.__doc__ = getattr(fn, "__doc__", None)
        return wrapper

    def _wrap_nvrtc(self) -> None:
        import torch

        original = getattr(torch.cuda, "_compile_kernel", None)
        if original is None:
            return
        probe = self

        class KernelProxy:
            def __init__(self, kernel: Any, name: str) -> None:
                self._kernel, self._name = kernel, name

            def __call__(self, *args: Any, **kwargs: Any) -> Any:
                probe.calls[f"nvrtc:{self._name}"] += 1
                before = probe.before_launch([*args, *kwargs.values()])
                out = self._kernel(*args, **kwargs)
                if probe.mode == "nan":
                    probe.poison([*args, *kwargs.values()])
                elif probe.mode == "identity":
                    probe.identity(before, None)
                return out

            def __getattr__(self, item: str) -> Any:
                return getattr(self._kernel, item)

        def compile_kernel(source: str, name: str, *args: Any, **kwargs: Any) -> Any:
            return KernelProxy(original(source, name, *args, **kwargs), name)

        torch.cuda._compile_kernel = compile_kernel

    def _wrap_triton(self) -> None:
        try:
            from triton.runtime.jit import JITFunction
        except Exception:  # triton absent (CPU hosts): nothing to wrap
            return
        original = JITFunction.run
        probe = self

        def run(self_fn: Any, *args: Any, **kwargs: Any) -> Any:
            probe.calls[f"triton:{getattr(self_fn, '__name__', 'kernel')}"] += 1
            warmup = kwargs.get("warmup", False)
            before = probe.before_launch([*args, *kwargs.values()]) if not warmup else None
            out = original(self_fn, *args, **kwargs)
            if probe.mode == "nan" and not warmup:
                probe.poison([*args, *kwargs.values()])
            elif probe.mode == "identity" and before is not None:
                probe.identity(before, None)
            return out

        JITFunction.run = run

    # -- sabotage ------------------------------------------------------------------------------------
    def protect(self, values: Iterable[Any]) -> None:
        import torch

        for v in values:
            if isinstance(v, torch.Tensor) and v.numel():
                self.protected.add(v.untyped_storage().data_ptr())

    def poison(self, values: Iterable[Any]) -> None:
        import torch

        for v in values:
            if isinstance(v, (list, tuple)):
                self.poison(v)
            elif (isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel()
                  and v.untyped_storage().data_ptr() not in self.protected):
                with torch.no_grad():
                    v.fill_(float("nan"))

    # -- identity sabotage: each kernel result becomes a copy of one of the kernel's unchanged inputs -----
    def before_launch(self, values: Iterable[Any]) -> list[tuple[Any, Any]] | None:
        """In identity mode: every floating tensor argument with a copy of its content before the launch."""
        if self.mode != "identity":
            return None

        return [(t, _content(t)) for t in observe.tensors(values) if t.is_floating_point() and t.numel()]

    def identity(self, before: list[tuple[Any, Any]] | None, result: Any) -> None:
        """Replace what the launch produced (its returned tensors and the arguments it wrote) with a copy of
        an argument it left unchanged, of the same dtype and size: the kernel becomes a copy of its input.
        A kernel that computes something no longer does; a kernel that only copied is not missed."""
        import torch

        if before is None:
            return
        if any(t.is_cuda for t, _ in before):
            torch.cuda.synchronize()
        written, unchanged = [], []
        for t, old in before:
            (unchanged if _unchanged(t, old) else written).append(t)
        arg_ptrs = {t.untyped_storage().data_ptr() for t, _ in before}
        fresh = [r for r in observe.tensors([result]) if r.is_floating_point() and r.numel()
                 and r.untyped_storage().data_ptr() not in arg_ptrs]
        with torch.no_grad():
            for target in [t for t in written if t.untyped_storage().data_ptr() not in self.protected] + fresh:
                src = next((u for u in unchanged if u.dtype == target.dtype and u.numel() == target.numel()
                            and u.untyped_storage().data_ptr() != target.untyped_storage().data_ptr()), None)
                if src is not None:
                    target.copy_(src.reshape(target.shape))
                    self.replaced += 1

    @property
    def launches(self) -> int:
        return sum(self.calls.values())


def _content(t: Any) -> Any:
    """What identifies an argument's content before a launch: on the CPU a digest of its bytes (a full-size clone
    of every argument was one more footprint held during the sabotage; issue 36), on a GPU a device copy."""
    if t.device.type != "cpu":
        return t.detach().clone()
    import hashlib

    import torch

    flat = t.detach().contiguous().reshape(-1).view(torch.uint8)
    return hashlib.blake2b(memoryview(flat.numpy()), digest_size=32).digest()


def _unchanged(t: Any, before: Any) -> bool:
    return _content(t) == before if isinstance(before, bytes) else observe.same(t, before)
