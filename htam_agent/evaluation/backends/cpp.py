"""C++ CPU candidates: `load_inline(cpp_sources=...)`, OpenMP allowed. Runs anywhere, CI included."""

from __future__ import annotations

from .. import build_cache
from ._devices import CpuDevice
from .base import Backend, registry_spec


class CppBackend(CpuDevice, Backend):
    """What a valid candidate contains is the registry's `cpp` spec (requires/forbids markers)."""

    spec = registry_spec("cpp")

    def prepare(self, build_root: str, threads: int | None, fast_build: bool = True) -> None:
        self.set_threads(threads)
        if fast_build:
            build_cache.install(build_root)
        else:
            import os

            os.environ["TORCH_EXTENSIONS_DIR"] = build_root
