"""Size overrides recorded as JSON (tuples tagged, so they come back as tuples)."""

from __future__ import annotations

from typing import Any


def encode(value: Any) -> Any:
    """JSON-able form of an override value (tuples are tagged, so they come back as tuples)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        if "__tuple__" in value:
            raise TypeError("a dict with the key '__tuple__' cannot be recorded")
        return {k: encode(v) for k, v in value.items()}
    raise TypeError(f"a {type(value).__name__} global cannot be recorded as a size override")


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"__tuple__"}:
            return tuple(decode(v) for v in value["__tuple__"])
        return {k: decode(v) for k, v in value.items()}
    return value
