"""A real `chroma run` server for the tests (the memory's shared mode, the bench on Ray)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: `chroma run ...` through this interpreter: chromadb is a dependency, so no executable needs to be found
CHROMA = [sys.executable, "-c", "import sys; from chromadb.cli.cli import app; sys.exit(app())"]


class ChromaServerProcess:
    """A real `chroma run` server on loopback; stop() and start() again keep its port and data folder."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path, self.port = path, port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> ChromaServerProcess:
        import chromadb
        from chromadb.config import Settings

        log = self.path / "server.log"
        self.path.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            self.proc = subprocess.Popen([*CHROMA, "run", "--path", str(self.path / "data"), "--port",
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
