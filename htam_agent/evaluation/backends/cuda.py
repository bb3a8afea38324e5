"""CUDA C++ candidates: `load_inline(cuda_sources=...)` as KernelBench writes them, or NVRTC plain kernels."""

from __future__ import annotations

import os

from ._devices import CudaDevice
from .base import Backend, registry_spec


class CudaBackend(CudaDevice, Backend):
    """What a valid candidate contains is the registry's `cuda` spec (requires/forbids markers)."""

    spec = registry_spec("cuda")
    load_inline_builds = True

    def prepare(self, build_root: str, threads: int | None, fast_build: bool = True) -> None:
        """Arch and job count, in the checker (its builder compiles for this arch) and in the sandbox alike;
        the sandbox installs the build wrapper itself (build_cache.install), after this."""
        if not fast_build:
            os.environ["TORCH_EXTENSIONS_DIR"] = build_root
            return
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", self.arch_list())
        os.environ.setdefault("MAX_JOBS", str(max(1, threads or os.cpu_count() or 1)))
