"""The test lanes' rule, shared by tests/conftest.py (which enforces it) and tests/test_fast_lane.py (which tests
it): a module of its own, because `from conftest import` finds whichever conftest was imported last."""

from __future__ import annotations

from typing import Any


def exhaustive_but_not_slow(items: list[Any]) -> list[str]:
    """Node ids marked `exhaustive` but not `slow`: the fast lane (`-m "not slow"`, which replaces addopts'
    `not exhaustive`) would run them."""
    return [item.nodeid for item in items if item.get_closest_marker("exhaustive") and not item.get_closest_marker("slow")]
