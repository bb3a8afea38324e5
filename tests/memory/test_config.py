"""Where the memory lives: per-user default, HTAM_MEMORY_DIR, server URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_agent.memory.config import ChromaServer, MemoryConfig, default_data_dir


def test_default_dir_is_per_user_and_env_overrides(monkeypatch, tmp_path):
    monkeypatch.delenv("HTAM_MEMORY_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "xdg" / "htam-agent" / "memory"
    monkeypatch.setenv("HTAM_MEMORY_DIR", str(tmp_path / "mine"))
    cfg = MemoryConfig.from_env()
    assert cfg.data_dir == tmp_path / "mine" and cfg.chroma_url is None
    assert cfg.sqlite_path.parent == cfg.chroma_path.parent == tmp_path / "mine"


def test_server_url_from_env_and_parsing(monkeypatch, tmp_path):
    monkeypatch.setenv("HTAM_CHROMA_URL", "http://10.0.0.5:8123")
    cfg = MemoryConfig.from_env(tmp_path)
    assert cfg.chroma_url == "http://10.0.0.5:8123" and cfg.chroma_location == "http://10.0.0.5:8123"
    assert ChromaServer.parse("localhost:9000") == ChromaServer("localhost", 9000, False)
    assert ChromaServer.parse("https://chroma.example.org") == ChromaServer("chroma.example.org", 443, True)
    with pytest.raises(ValueError):
        ChromaServer.parse("ftp://x")


def test_string_paths_are_accepted():
    assert MemoryConfig("~/m").data_dir == Path("~/m").expanduser()
