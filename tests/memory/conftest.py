"""Fixtures for the memory tests: real SQLite, real Chroma (embedded and a `chroma run` server), one embedding
model per test session."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the package may not be installed in the test venv
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from htam_agent.memory.config import MemoryConfig  # noqa: E402
from htam_agent.memory.htam import HTAMemory  # noqa: E402


def subprocess_env() -> dict[str, str]:
    """Environment for helper processes: the repository importable, no network-facing hub access."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["HF_HUB_OFFLINE"] = "1"
    return env


@pytest.fixture(scope="session")
def embedding_model():
    """Load the shipped model once for the whole session (every store shares the process-wide instance)."""
    from htam_agent.memory.embeddings import get_model

    return get_model("cpu")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def chroma_executable() -> str | None:
    cand = Path(sys.executable).with_name("chroma")
    if cand.exists():
        return str(cand)
    return shutil.which("chroma")


class ChromaServerProcess:
    """A real `chroma run` server on loopback; stop() and start() again keep its port and data folder."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        exe = chroma_executable()
        if exe is None:
            pytest.skip("the `chroma` executable is not installed next to the Python interpreter nor on PATH")
        self.exe, self.path, self.port = exe, path, port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> ChromaServerProcess:
        import chromadb
        from chromadb.config import Settings

        log = self.path / "server.log"
        self.path.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            self.proc = subprocess.Popen([self.exe, "run", "--path", str(self.path / "data"), "--port",
                                          str(self.port), "--host", "127.0.0.1"], stdout=out, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while True:
            try:
                chromadb.HttpClient(host="127.0.0.1", port=self.port,
                                    settings=Settings(anonymized_telemetry=False)).heartbeat()
                return self
            except Exception as e:
                if self.proc.poll() is not None or time.time() > deadline:
                    self.stop()
                    raise RuntimeError(f"chroma server did not start: {log.read_text()[-2000:]}") from e
                time.sleep(0.3)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """A real `chroma run` server on loopback for the session; yields its URL."""
    server = ChromaServerProcess(tmp_path_factory.mktemp("chroma_server")).start()
    yield server.url
    server.stop()


@pytest.fixture(params=["embedded", "server"])
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
