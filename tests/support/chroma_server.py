"""A real `chroma run` server for the tests (the memory's shared mode, the bench on Ray)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


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
