"""The page's tests: their own folders, builds shared per session, screenshots kept under tests/output/ui/."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_agent.run import resources

OUTPUT = Path(__file__).resolve().parents[1] / "output" / "ui"


@pytest.fixture
def ui_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, build_root: str) -> Path:
    monkeypatch.setenv("HTAM_BUILD_DIR", build_root)
    monkeypatch.setenv("HTAM_VERDICT_DIR", str(tmp_path / "verdicts"))
    monkeypatch.setenv("HTAM_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("HTAM_MEMORY_DIR", str(tmp_path / "memory"))
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    for var in ("HTAM_MODEL", "HTAM_BASE_URL", "HTAM_CODER", "HTAM_BACKEND", "HTAM_STEPS"):
        monkeypatch.delenv(var, raising=False)
    resources.clear_cache()
    yield tmp_path
    resources.clear_cache()


@pytest.fixture
def shots() -> Path:
    OUTPUT.mkdir(parents=True, exist_ok=True)
    return OUTPUT


from support.fixtures import *  # noqa: E402,F401,F403  (no tracing, no proxy for localhost)
