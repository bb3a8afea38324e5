"""Is the candidate's own kernel what computes the result? (cheat patterns 10 and 11, and 7 indirectly)

Three checks, all behavioural except the first:
- static: a `try/except` whose handler calls PyTorch (a fallback), or `ModelNew` inheriting the reference;
- launches: every kernel entry point (functions of `load_inline` modules, NVRTC kernels from
  `torch.cuda._compile_kernel`, Triton `JITFunction`s) is wrapped and counted; a forward that launches
  none of them is not a kernel;
- sabotage: extra forwards in which every result our kernels produce is overwritten with NaN, then (the
  identity sabotage) replaced by a copy of the kernel's own input. Each output must change; an output that
  still matches the reference was computed without the kernel (a copy kernel's output stays right when it
  is replaced by its input: it computes nothing);
- reference ops: the PyTorch profiler lists the ATen ops a forward runs, with their input shapes; a
  candidate running all of the reference's own compute ops on the same shapes is computing it with
  PyTorch, whatever kernels it launches besides.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from htam_agent import threadsafe

# ATen ops that move or allocate memory without computing anything: not evidence of computing the result.
TRIVIAL_OPS = frozenset(
    "aten::" + n for n in (
        "empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like ones ones_like full "
        "full_like fill_ zero_ view reshape _reshape_alias _unsafe_view as_strided contiguous clone copy_ "
        "to _to_copy t transpose permute expand expand_as squeeze unsqueeze flatten unflatten select slice "
        "narrow detach alias resolve_conj resolve_neg lift_fresh size stride numel item _local_scalar_dense "
        "is_nonzero result_type split chunk unbind view_as numpy_T contiguous_ record_stream set_ "
        "_has_compatible_shallow_copy_type is_same_size"
    ).split()
)

_TORCH_ROOTS = {"torch", "F", "nn", "np", "numpy"}


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

        return [(t, t.detach().clone()) for t in _tensors(values) if t.is_floating_point() and t.numel()]

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
            (unchanged if _same(t, old) else written).append(t)
        arg_ptrs = {t.untyped_storage().data_ptr() for t, _ in before}
        fresh = [r for r in _tensors([result]) if r.is_floating_point() and r.numel()
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


def _tensors(values: Iterable[Any]) -> list[Any]:
    import torch

    out: list[Any] = []
    for v in values:
        if isinstance(v, (list, tuple)):
            out.extend(_tensors(v))
        elif isinstance(v, torch.Tensor):
            out.append(v)
    return out


def _same(a: Any, b: Any) -> bool:
    """Bitwise equal content, NaN equal to NaN."""
    import torch

    return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())


# -- static checks -------------------------------------------------------------------------------------


def _call_root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    if isinstance(node, ast.Call):  # super().forward(...)
        return _call_root(node.func)
    return node.id if isinstance(node, ast.Name) else None


def static_flags(source: str) -> list[tuple[str, str]]:
    """(flag, reason) for fallbacks to PyTorch in exception handlers and for inheriting the reference."""
    try:
        tree = threadsafe.parse(source)
    except SyntaxError:
        return []
    flags = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            for base in node.bases:
                if isinstance(base, ast.Name) and base.id == "Model":
                    flags.append(("inherits_reference",
                                  "ModelNew subclasses the reference Model; write the computation as a kernel"))
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                if any(isinstance(n, ast.Raise) for n in ast.walk(handler)):
                    continue  # re-raises: validation with a better message, not a fallback
                for sub in ast.walk(handler):
                    if isinstance(sub, ast.Call):
                        root = _call_root(sub.func)
                        if root in _TORCH_ROOTS or root == "super":
                            flags.append(("fallback",
                                          f"an exception handler (line {handler.lineno}) falls back to PyTorch; "
                                          "a failing kernel must fail, not be replaced"))
                            break
                else:
                    continue
                break
    return flags


# -- profiler ------------------------------------------------------------------------------------------


def aten_ops(fn: Callable[[], Any]) -> set[tuple[str, str]]:
    """The ATen ops `fn` runs, with their input shapes (dispatcher events: the same on CPU and GPU).

    Shapes matter: a split reduction whose kernel writes partial sums and finishes with `torch.sum` over
    them runs `aten::sum` on a much smaller tensor than the reference does, which is honest work sharing.
    """
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    return {(e.name, str(e.input_shapes)) for e in prof.events() if e.name.startswith("aten::")}


def compute_ops(ops: set[tuple[str, str]]) -> set[tuple[str, str]]:
    return {o for o in ops if o[0] not in TRIVIAL_OPS}
