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
import subprocess
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


def _pch_dir(root: Path, extra_cflags: list[str], extra_include_paths: list[str]) -> Path | None:
    """A precompiled `torch/extension.h` for these flags, in its own folder, built once under a lock.

    torch's own `use_pch` keeps one PCH inside its install and rebuilds it whenever the flags change, so
    candidates with different flags (-O3 here, -fopenmp there) would thrash it, and parallel builds would
    race on it. One folder per flag signature, put first on the include path, avoids both: gcc looks for
    `torch/extension.h.gch` in each include directory before the header itself.
    """
    import sysconfig

    import torch.utils.cpp_extension as ext

    if not ext.IS_LINUX:
        return None
    compiler = ext.get_cxx_compiler()
    if not ext.check_compiler_is_gcc(compiler):
        return None
    torch_inc = os.path.join(ext._TORCH_PATH, "include")
    header = os.path.join(torch_inc, "torch", "extension.h")
    cmd = [compiler, "-x", "c++-header", header,
           "-I", torch_inc, "-I", sysconfig.get_path("include"),
           "-I", os.path.join(torch_inc, "torch", "csrc", "api", "include"),
           *[f"-I{p}" for p in extra_include_paths], *extra_cflags,
           "-DTORCH_API_INCLUDE_EXTENSION_H", "-std=c++20", "-fPIC"]
    sig = hashlib.sha256(json.dumps([cmd, ext.torch.__version__]).encode()).hexdigest()[:20]
    folder = root / "pch" / sig
    target = folder / "torch" / "extension.h.gch"
    if target.exists():
        return folder
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(root / f".pch-{sig}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            tmp = target.with_suffix(f".gch.{os.getpid()}")
            proc = subprocess.run([*cmd, "-o", str(tmp)], capture_output=True, text=True)
            if proc.returncode != 0:
                return None  # flags the header cannot be precompiled with: build without a PCH
            # gcc, having found the .gch here, looks for the header here too whenever it cannot use the
            # PCH (a second #include of extension.h in the candidate's own source): give it the header.
            link = target.parent / "extension.h"
            if not link.exists():
                os.symlink(header, link)
            os.replace(tmp, target)
    return folder


def install(build_root: str, use_pch: bool = True) -> None:
    """Wrap `load_inline` (process-wide; idempotent)."""
    global _installed
    if _installed:
        return
    import torch.utils.cpp_extension as ext

    original = ext.load_inline
    root = Path(build_root)
    root.mkdir(parents=True, exist_ok=True)

    def load_inline(name: str, cpp_sources: Any, *args: Any, **kwargs: Any) -> Any:
        params = dict(zip(("cuda_sources", "sycl_sources", "functions"), args, strict=False))
        params.update(kwargs)
        params["cpp_sources"] = cpp_sources
        params["use_pch"] = False  # ours, below, instead of torch's single shared one
        key = build_key(name, params)
        build_dir = root / key[:32]
        build_dir.mkdir(parents=True, exist_ok=True)
        if use_pch and not params.get("no_implicit_headers"):
            pch = _pch_dir(root, _as_list(params.get("extra_cflags")), _as_list(params.get("extra_include_paths")))
            if pch is not None:
                params["extra_include_paths"] = [str(pch), *_as_list(params.get("extra_include_paths"))]
        params["build_directory"] = str(build_dir)
        params.setdefault("verbose", False)
        cpp = params.pop("cpp_sources")
        return original(name, cpp, **params)

    # A candidate passing use_pch=False must not delete a PCH that parallel builds rely on.
    ext.remove_extension_h_precompiler_headers = lambda: None
    ext.load_inline = load_inline
    _installed = True
