"""Triton candidates: `@triton.jit` kernels launched from `ModelNew.forward`."""

from __future__ import annotations

import os
import re

from ._devices import CudaDevice
from .base import Backend, defines_model_new, strip_comments


class TritonBackend(CudaDevice, Backend):
    name = "triton"
    device_type = "cuda"
    description = "Triton kernels (@triton.jit)"

    def static_problems(self, source: str) -> list[str]:
        code = strip_comments(source)
        problems = []
        if not defines_model_new(source):
            problems.append("no `class ModelNew(nn.Module)` at module level")
        if not re.search(r"@triton\.jit\b|@triton\.autotune\b|@jit\b", code):
            problems.append("no `@triton.jit` kernel in the source")
        return problems

    def prepare(self, build_root: str, threads: int | None, fast_build: bool = True) -> None:
        # Triton's own cache is content-addressed already; keep it beside our builds so one folder holds all.
        os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(build_root, "triton"))
