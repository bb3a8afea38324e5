"""Content-addressed builds for `load_inline` candidates.

KernelBench candidates call `torch.utils.cpp_extension.load_inline` at import time. Inside the worker we wrap
it so that every build lands in `<build root>/<sha256 of sources, flags, torch, arch>`: a candidate seen
before (or compiled by the parallel compile phase) imports in a second instead of recompiling, and
concurrent workers building the same content share one directory under torch's own file lock. We also
turn on torch's precompiled `torch/extension.h` and keep it: a candidate passing `use_pch=False` would
otherwise delete it under the feet of parallel builds.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import Any

_installed = False


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def build_key(name: str, kwargs: dict[str, Any]) -> str:
    import torch

    material = {
        "name": name,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "arch": os.environ.get("TORCH_CUDA_ARCH_LIST", ""),
        **{k: (_as_list(v) if k.endswith(("sources", "cflags", "ldflags", "paths")) else repr(v))
           for k, v in sorted(kwargs.items()) if k not in ("build_directory", "verbose")},
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def install(build_root: str, use_pch: bool = True) -> None:
    """Wrap `load_inline` (process-wide; idempotent)."""
    global _installed
    if _installed:
        return
    import torch.utils.cpp_extension as ext

    original = ext.load_inline
    root = Path(build_root)
    root.mkdir(parents=True, exist_ok=True)
    lock_path = root / ".pch.lock"

    build_pch = ext._check_and_build_extension_h_precompiler_headers

    def locked_build_pch(*args: Any, **kwargs: Any) -> None:
        # The PCH lives inside torch's install; two workers writing it at once would corrupt it.
        with open(lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                build_pch(*args, **kwargs)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def load_inline(name: str, cpp_sources: Any, *args: Any, **kwargs: Any) -> Any:
        params = dict(zip(("cuda_sources", "sycl_sources", "functions"), args, strict=False))
        params.update(kwargs)
        params["cpp_sources"] = cpp_sources
        if use_pch and ext.IS_LINUX:
            params["use_pch"] = True
        key = build_key(name, params)
        build_dir = root / key[:32]
        build_dir.mkdir(parents=True, exist_ok=True)
        params["build_directory"] = str(build_dir)
        params.setdefault("verbose", False)
        cpp = params.pop("cpp_sources")
        return original(name, cpp, **params)

    ext._check_and_build_extension_h_precompiler_headers = locked_build_pch
    ext.remove_extension_h_precompiler_headers = lambda: None
    ext.load_inline = load_inline
    _installed = True
