"""`load_inline` inside the sandbox: shared builds come from the checker, verified; the rest stay private.

KernelBench candidates call `torch.utils.cpp_extension.load_inline` at import time. The wrapper installed
here sends the call's arguments to the checker (`request`, an `{"event": "build"}` message on the
sandbox's socket), which builds them once in the shared cache (common/builder.py: the checker is the only writer there). The
answer hands over the trusted `.so` as a read-only descriptor with its sha256; the wrapper copies it into
this evaluation's private root, checks the hash on the copy and loads the copy, so nothing another candidate wrote is ever loaded.
Arguments a shared build does not take, and every call when there is no checker to ask (`request=None`:
benchmarks, a trusted process), are built by a BuildService on the private root in this process.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..common import builder

Request = Callable[[dict[str, Any]], dict[str, Any]]
_installed = False
loaded: list[dict[str, Any]] = []  # what this process loaded: key, trusted path, sha256 (read by the tests)


def build_key(name: str, kwargs: dict[str, Any]) -> str:
    """The shared cache's key for these `load_inline` arguments (builder.key_of)."""
    return builder.key_of(builder.normalize(name, kwargs))


def _load_verified(answer: dict[str, Any], fds: list[int], private: Path) -> Any:
    """Copy the trusted `.so` (from the descriptor the checker handed over) into the private root, check its
    hash on the copy, load the copy."""
    import torch.utils.cpp_extension as ext

    name, key = str(answer["module"]), str(answer["key"])
    folder = private / "loaded" / key[:32]
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / f"{name}.so"
    with open(copy, "wb") as out:
        offset = 0
        while block := os.pread(fds[0], 1 << 20, offset):
            out.write(block)
            offset += len(block)
    got = builder.sha256_file(copy)
    if got != answer["sha256"]:
        raise RuntimeError(f"the evaluator's shared build of {name} does not match its manifest (sha256 {got[:12]} "
                           f"!= {str(answer['sha256'])[:12]}): the build cache is damaged; not loaded")
    loaded.append({"key": key, "so": str(answer["so"]), "sha256": got})
    return ext._import_module_from_library(name, str(folder), bool(answer.get("is_python_module", True)))


def install(private_root: str, request: Request | None = None, use_pch: bool = True) -> None:
    """Wrap `load_inline` (process-wide; idempotent). Builds go to the checker when `request` is given."""
    global _installed
    if _installed:
        return
    import torch.utils.cpp_extension as ext

    root = Path(private_root)
    root.mkdir(parents=True, exist_ok=True)
    local = builder.BuildService(root, use_pch=use_pch and request is None, max_builds=1 << 30)
    unshared = builder.BuildService(root / "private", use_pch=False, max_builds=1 << 30)

    def load_inline(name: str, cpp_sources: Any, *args: Any, **kwargs: Any) -> Any:
        params = dict(zip(("cuda_sources", "sycl_sources", "functions", "extra_cflags", "extra_cuda_cflags",
                           "extra_sycl_cflags", "extra_ldflags", "extra_include_paths"), args, strict=False))
        params.update(kwargs)
        params["cpp_sources"] = cpp_sources
        body = {"name": name, "args": params}
        reply: dict[str, Any] = {"build": {"private": True}}
        if request is not None:
            reply = request({"event": "build", **body})
        fds = list(reply.get("fds") or reply.get("_fds") or [])
        answer = reply.get("build") or {}
        if answer.get("private"):
            service = local if request is None else unshared
            reply = service.handle(body, _far())
            fds, answer = reply.get("_fds", []), reply["build"]
            if answer.get("private"):  # not even a private BuildService takes them: torch's own path
                params.pop("build_directory", None)
                params["use_pch"] = False  # torch's own PCH lives in its install, read-only here
                folder = root / "torch" / f"{name}"
                folder.mkdir(parents=True, exist_ok=True)
                cpp = params.pop("cpp_sources")
                return original(name, cpp, build_directory=str(folder), **params)
        try:
            if not answer.get("ok"):
                text = str(answer.get("text", "the build failed"))
                if answer.get("kind") == "environment":
                    raise RuntimeError(f"evaluator error while building extension '{name}': {text}")
                raise RuntimeError(f"Error building extension '{name}':\n{text}")
            if not fds:
                raise RuntimeError(f"evaluator error: the shared build of '{name}' came without its module")
            return _load_verified(answer, fds, root)
        finally:
            for fd in fds:
                os.close(fd)

    original = ext.load_inline
    # A candidate passing use_pch=False must not delete a PCH (torch's own, in its install).
    ext.remove_extension_h_precompiler_headers = lambda: None
    ext.load_inline = load_inline
    _installed = True


def _far() -> float:
    import time

    return time.monotonic() + 3600.0


def _pch_dir(root: Path, extra_cflags: list[str], extra_include_paths: list[str]) -> Path | None:
    """A verified precompiled `torch/extension.h` folder for these flags under `root` (benchmarks use it)."""
    spec = builder.normalize("pch", {"cpp_sources": "", "extra_cflags": extra_cflags,
                                     "extra_include_paths": extra_include_paths})
    return builder.BuildService(root).pch(spec, _far())
