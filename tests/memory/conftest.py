"""Fixtures for the memory tests: real SQLite, real Chroma (embedded and a `chroma run` server), one embedding
model per test session."""

from __future__ import annotations

import os
import uuid

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from support.chroma_server import ChromaServerProcess
from support.procs import child_env

from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.htam import HTAMemory


def subprocess_env() -> dict[str, str]:
    """Environment for helper processes: the repository importable, no network-facing hub access."""
    return child_env(HF_HUB_OFFLINE="1")


@pytest.fixture(scope="session")
def embedding_model():
    """Load the shipped model once for the whole session (every store shares the process-wide instance)."""
    from htam_agent.memory.embeddings import get_model

    return get_model("cpu")


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """A real `chroma run` server on loopback for the session; yields its URL."""
    server = ChromaServerProcess(tmp_path_factory.mktemp("chroma_server")).start()
    yield server.url
    server.stop()


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.slow)])  # fast lane: embedded only
def store_config(request, tmp_path, embedding_model) -> MemoryConfig:
    """The same store tests run against the embedded PersistentClient and a real server (HttpClient)."""
    if request.param == "server":
        url = request.getfixturevalue("chroma_server")
        # one server for the session: a unique collection prefix isolates each test
        return MemoryConfig(tmp_path / "mem", chroma_url=url, collection_prefix=f"t{uuid.uuid4().hex[:10]}")
    return MemoryConfig(tmp_path / "mem")


@pytest.fixture
def mem(tmp_path) -> HTAMemory:
    m = HTAMemory(MemoryConfig(tmp_path / "mem"))
    yield m
    m.close()
