"""Triton candidates: `@triton.jit` kernels launched from `ModelNew.forward`."""

from __future__ import annotations

import os

from ._devices import CudaDevice
from .base import Backend, registry_spec


class TritonBackend(CudaDevice, Backend):
    """What a valid candidate contains is the registry's `triton` spec (requires/forbids markers)."""

    spec = registry_spec("triton")

    def prepare(self, build_root: str, threads: int | None, fast_build: bool = True) -> None:
        # Triton's own cache is content-addressed already; keep it beside our builds so one folder holds all.
        os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(build_root, "triton"))
