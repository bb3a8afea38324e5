"""Evaluation backends: one module each, found through the backend registry (`htam_agent/backend_registry.py`)."""

from __future__ import annotations

import importlib

from htam_agent.backend_registry import BACKENDS, detect, spec

from .base import Backend

#: The registry's names (kept under this name for the evaluator's callers).
BACKEND_NAMES = BACKENDS


def get_backend(name: str) -> Backend:
    """A fresh backend object by name; the error lists the valid names."""
    s = spec(name)
    return getattr(importlib.import_module(s.evaluator_module), s.evaluator_class)()


def detect_backend(source: str) -> str | None:
    """Guess a candidate's backend from its source (used when --backend is not given)."""
    return detect(source)


__all__ = ["BACKEND_NAMES", "Backend", "detect_backend", "get_backend"]
