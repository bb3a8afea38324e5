"""Backend registry. A backend is one module; register it here."""

from __future__ import annotations

import re

from .base import Backend

_BACKENDS = {"cuda": "cuda:CudaBackend", "triton": "triton:TritonBackend", "cpp": "cpp:CppBackend"}
BACKEND_NAMES = tuple(_BACKENDS)


def get_backend(name: str) -> Backend:
    """A fresh backend object by name; the error lists the valid names."""
    if name not in _BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of: {', '.join(_BACKENDS)}")
    module_name, cls_name = _BACKENDS[name].split(":")
    import importlib

    module = importlib.import_module(f"{__name__}.{module_name}")
    return getattr(module, cls_name)()


def detect_backend(source: str) -> str | None:
    """Guess a candidate's backend from its source (used when --backend is not given)."""
    if re.search(r"@triton\.(jit|autotune)\b", source):
        return "triton"
    if "__global__" in source:
        return "cuda"
    if re.search(r"\bload_inline\s*\(", source):
        return "cpp"
    return None


__all__ = ["BACKEND_NAMES", "Backend", "detect_backend", "get_backend"]
