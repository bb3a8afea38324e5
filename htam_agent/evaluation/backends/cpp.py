"""C++ CPU candidates: `load_inline(cpp_sources=...)`, OpenMP allowed. Runs anywhere, CI included."""

from __future__ import annotations

import os

from ._devices import CpuDevice
from .base import Backend, registry_spec


class CppBackend(CpuDevice, Backend):
    """What a valid candidate contains is the registry's `cpp` spec (requires/forbids markers)."""

    spec = registry_spec("cpp")
    load_inline_builds = True

    def prepare(self, build_root: str, threads: int | None, fast_build: bool = True) -> None:
        """Threads; the sandbox installs the build wrapper itself (build_cache.install), after this."""
        self.set_threads(threads)
        if not fast_build:
            os.environ["TORCH_EXTENSIONS_DIR"] = build_root
