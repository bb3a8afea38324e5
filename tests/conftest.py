"""Shared fixtures: one build folder per test session, so each C++ extension compiles once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.lanes import exhaustive_but_not_slow

from htam_agent.bundled_tasks import SUITE_DIR


@pytest.fixture(scope="session")
def build_root(tmp_path_factory: pytest.TempPathFactory) -> str:
    env = os.environ.get("HTAM_TEST_BUILD_DIR")  # reuse builds across local runs if set
    return env or str(tmp_path_factory.mktemp("builds"))


@pytest.fixture(scope="session", autouse=True)
def _one_build_root_per_session(build_root: str) -> Iterator[None]:
    """Every evaluator of the session builds into `build_root`, asked for or not (an EvalOptions without a
    build_root, a CLI in a subprocess, a Ray worker): the precompiled header, the cheat catalogue's shared
    extension and each honest candidate are then built once per run, not once per folder that tests chose."""
    old = os.environ.get("HTAM_BUILD_DIR")
    os.environ["HTAM_BUILD_DIR"] = build_root
    yield
    if old is None:
        os.environ.pop("HTAM_BUILD_DIR", None)
    else:
        os.environ["HTAM_BUILD_DIR"] = old


@pytest.fixture(scope="session", autouse=True)
def _no_shipped_memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The agent's tests start from an empty memory, as they always did: the experience shipped with the package
    (htam_agent/memory/shipped.py) is read from an empty folder. tests/memory/test_shipped.py tests the shipped
    files themselves (it points HTAM_SHIPPED_DIR back at the package's)."""
    old = os.environ.get("HTAM_SHIPPED_DIR")
    os.environ["HTAM_SHIPPED_DIR"] = str(tmp_path_factory.mktemp("no_shipped_memory"))
    yield
    if old is None:
        os.environ.pop("HTAM_SHIPPED_DIR", None)
    else:
        os.environ["HTAM_SHIPPED_DIR"] = old


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: every exhaustive case is seen
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`gpu` tests skip without a CUDA device, so a `-m` of one's own (`-m "not slow"`, the fast lane, replaces
    addopts' `-m 'not gpu and not exhaustive'`) still runs cleanly on a CPU machine. An `exhaustive` case must
    also be `slow`, or the fast lane, whose `-m "not slow"` drops addopts' exclusion, would run the sweeps."""
    loose = exhaustive_but_not_slow(items)
    if loose:
        raise pytest.UsageError(f"marked exhaustive but not slow (mark them slow too): {loose[:5]}")
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu:
        return
    import torch

    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="gpu: no CUDA device here (run on the device host)")
        for item in gpu:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def relu_task() -> Path:
    return SUITE_DIR / "elementwise_leaky_relu.py"
