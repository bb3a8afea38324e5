"""The backend interface: what a candidate must contain, how its device is timed, synchronized and flushed.

A backend is a small object used inside the checker and the sandbox. Adding one (say, HIP) is adding a module
with a subclass and its `BackendSpec` in the registry (`htam_agent/backend_registry.py`), which holds the facts:
name, device type, description, and the markers a valid candidate contains.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any

from htam_agent.backend_registry import BackendSpec
from htam_agent.backend_registry import spec as _spec


class Timer(ABC):
    """Times one call: `start()`, run, `stop()`; `elapsed_ms()` after the device is idle."""

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def elapsed_ms(self) -> float: ...


class Backend(ABC):
    spec: BackendSpec  # the registry's facts; subclasses set it with `spec = registry_spec("<name>")`
    load_inline_builds = False  # candidates build with load_inline: the sandbox wraps it (sandbox/build_cache.py)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def device_type(self) -> str:
        """"cuda" or "cpu": where inputs live and what the reference runs on."""
        return self.spec.device_type

    @property
    def description(self) -> str:
        return self.spec.description

    # --- static: what a valid candidate contains -------------------------------------------------------
    def static_problems(self, source: str) -> list[str]:
        """Reasons the source cannot be a candidate of this backend (empty when it can): a module-level
        ModelNew, and the spec's required and forbidden markers searched in the comment-stripped source."""
        code = strip_comments(source)
        problems = [] if defines_model_new(source) else ["no `class ModelNew(nn.Module)` at module level"]
        problems += [why for pattern, why in self.spec.requires if not re.search(pattern, code)]
        problems += [why for pattern, why in self.spec.forbids if re.search(pattern, code)]
        return problems

    # --- set-up and device primitives (in the checker and the sandbox) ------------------------------------
    @abstractmethod
    def prepare(self, build_root: str, threads: int | None, fast_build: bool = True) -> None:
        """Process-wide set-up before the candidate is imported (build cache, arch flags, threads).

        `fast_build=False` leaves torch's defaults (no content cache, no PCH, every visible arch): the
        naive path the throughput benchmark compares against.
        """

    @abstractmethod
    def device(self, index: int = 0) -> Any:
        """The torch.device candidates run on."""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait for all work on the whole device (every stream), so nothing escapes the timer."""

    @abstractmethod
    def new_timer(self) -> Timer: ...

    @abstractmethod
    def flush_cache(self) -> None:
        """Evict the last-level cache so every timed call starts cold, as in a real model."""

    def release_flush(self) -> None:
        """Let the flush's buffer go once nothing more is timed (the next flush allocates it again)."""
        return None

    @abstractmethod
    def device_info(self) -> dict[str, Any]:
        """Name and properties recorded in the verdict (and part of the verdict store's key)."""

    def empty_cache(self) -> None:
        """Release cached allocator blocks between phases (GPU only)."""
        return None


def registry_spec(name: str) -> BackendSpec:
    """The registry's spec for a backend class (`spec = registry_spec("cuda")`)."""
    return _spec(name)


def strip_comments(source: str) -> str:
    """Python and C-style comments removed, so a kernel mentioned only in a comment does not count."""
    source = re.sub(r"/\*.*?\*/", "", source, flags=re.S)
    source = re.sub(r"//[^\n]*", "", source)
    return re.sub(r"(?m)^\s*#(?!\s*(include|pragma|define|if|endif|else|elif|undef)\b)[^\n]*", "", source)


def defines_model_new(source: str) -> bool:
    return re.search(r"^class\s+ModelNew\b", source, flags=re.M) is not None
