"""`load_inline` in the test's own process through the session's build service (common/builder.py).

torch's own `load_inline` compiles `main.cpp` without a precompiled header (16 s against 6 s on the 2-core VM,
benchmarks/RESULTS.md) and caches by name under HOME. Routed here, an in-process build uses the precompiled
torch header that the session's evaluator builds made (or makes it there once) and is kept for the session
beside theirs, content-addressed as theirs are.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest


def route_load_inline(monkeypatch: pytest.MonkeyPatch, build_root: str) -> None:
    """Until the test ends, `torch.utils.cpp_extension.load_inline` builds in `build_root`'s shared cache."""
    import torch.utils.cpp_extension as ext

    from htam_agent.evaluation.common import builder

    service = builder.BuildService(Path(build_root) / "shared")
    original = ext.load_inline

    def load_inline(name: str, cpp_sources: Any, **kwargs: Any) -> Any:
        ext.load_inline = original  # the service builds with torch's own, looked up at call time
        try:
            reply = service.handle({"name": name, "args": {**kwargs, "cpp_sources": cpp_sources}},
                                   time.monotonic() + 1800.0)
        finally:
            ext.load_inline = load_inline
        answer = reply["build"]
        for fd in reply.get("_fds", []):
            os.close(fd)
        if not answer.get("ok"):
            raise RuntimeError(f"building {name} in {build_root}/shared failed: {answer}")
        return ext._import_module_from_library(answer["module"], str(Path(answer["so"]).parent),
                                               answer["is_python_module"])

    monkeypatch.setattr(ext, "load_inline", load_inline)
