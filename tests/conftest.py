"""Shared fixtures: one build folder per test session, so each C++ extension compiles once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from htam_agent.tasks import SUITE_DIR


@pytest.fixture(scope="session")
def build_root(tmp_path_factory: pytest.TempPathFactory) -> str:
    env = os.environ.get("HTAM_TEST_BUILD_DIR")  # reuse builds across local runs if set
    return env or str(tmp_path_factory.mktemp("builds"))


@pytest.fixture(scope="session")
def relu_task() -> Path:
    return SUITE_DIR / "elementwise_leaky_relu.py"
