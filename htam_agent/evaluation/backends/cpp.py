"""C++ CPU candidates: `load_inline(cpp_sources=...)`, OpenMP allowed. Runs anywhere, CI included."""

from __future__ import annotations

import re

from .. import build_cache
from ._devices import CpuDevice
from .base import Backend, defines_model_new, strip_comments


class CppBackend(CpuDevice, Backend):
    name = "cpp"
    device_type = "cpu"
    description = "C++ CPU kernels via torch.utils.cpp_extension.load_inline (OpenMP allowed)"

    def static_problems(self, source: str) -> list[str]:
        code = strip_comments(source)
        problems = []
        if not defines_model_new(source):
            problems.append("no `class ModelNew(nn.Module)` at module level")
        if not re.search(r"\bload_inline\s*\(", code):
            problems.append("no C++ extension: compile the kernel with torch.utils.cpp_extension.load_inline(cpp_sources=...)")
        if re.search(r"\bcuda_sources\s*=", code):
            problems.append("cuda_sources given to a cpp candidate: use --backend cuda for CUDA code")
        return problems

    def prepare(self, build_root: str, threads: int | None, fast_build: bool = True) -> None:
        self.set_threads(threads)
        if fast_build:
            build_cache.install(build_root)
        else:
            import os

            os.environ["TORCH_EXTENSIONS_DIR"] = build_root
