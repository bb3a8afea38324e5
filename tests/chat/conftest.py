"""Each chat test gets its own memory, verdict store and run folder; builds are shared per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_agent.run import resources


@pytest.fixture
def chat_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, build_root: str) -> Path:
    monkeypatch.setenv("HTAM_BUILD_DIR", build_root)
    monkeypatch.setenv("HTAM_VERDICT_DIR", str(tmp_path / "verdicts"))
    monkeypatch.setenv("HTAM_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("HTAM_MEMORY_DIR", str(tmp_path / "memory"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    for var in ("HTAM_MODEL", "HTAM_BASE_URL", "HTAM_CODER", "HTAM_BACKEND", "HTAM_STEPS"):
        monkeypatch.delenv(var, raising=False)
    resources.clear_cache()
    yield tmp_path
    resources.clear_cache()


from support.fixtures import *  # noqa: E402,F401,F403  (scripted OpenAI server)
