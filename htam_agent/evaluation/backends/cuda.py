"""CUDA C++ candidates: `load_inline(cuda_sources=...)` as KernelBench writes them, or NVRTC plain kernels."""

from __future__ import annotations

import os
import re

from .. import build_cache
from ._devices import CudaDevice
from .base import Backend, defines_model_new, strip_comments


class CudaBackend(CudaDevice, Backend):
    name = "cuda"
    device_type = "cuda"
    description = "CUDA C++ via torch.utils.cpp_extension.load_inline, or __global__ kernels via NVRTC"

    def static_problems(self, source: str) -> list[str]:
        code = strip_comments(source)
        problems = []
        if not defines_model_new(source):
            problems.append("no `class ModelNew(nn.Module)` at module level")
        if "__global__" not in code:
            problems.append("no CUDA `__global__` kernel in the source")
        if not re.search(r"\bload_inline\s*\(|\b_compile_kernel\s*\(", code):
            problems.append(
                "the CUDA source is never compiled: call torch.utils.cpp_extension.load_inline(cuda_sources=...) "
                "or torch.cuda._compile_kernel(...)"
            )
        return problems

    def prepare(self, build_root: str, threads: int | None, fast_build: bool = True) -> None:
        if not fast_build:
            os.environ["TORCH_EXTENSIONS_DIR"] = build_root
            return
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", self.arch_list())
        os.environ.setdefault("MAX_JOBS", str(max(1, threads or os.cpu_count() or 1)))
        build_cache.install(build_root)
