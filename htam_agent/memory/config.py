"""Where the memory lives: a per-user data directory by default, a Chroma server when several share it.

Environment: ``HTAM_MEMORY_DIR`` (data directory), ``HTAM_CHROMA_URL`` (e.g. ``http://127.0.0.1:8000``; when
set, strategies, notes and the transition log go to that server instead of the folder),
``HTAM_MEMORY_NAMESPACE`` (the collections' prefix, ``htam`` by default), ``HTAM_CHROMA_TOKEN`` (optional
bearer token sent to the server), ``HTAM_EMBED_DEVICE`` (``cpu`` by default: the GPU is for kernels), ``HTAM_EMBED_THREADS`` (1 by default).
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

APP_NAME = "htam-agent"


def default_data_dir() -> Path:
    """The platform's per-user data directory for the memory (no third-party dependency)."""
    env = os.environ.get("HTAM_MEMORY_DIR")
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / APP_NAME / "memory"


@dataclass(frozen=True)
class ChromaServer:
    host: str
    port: int
    ssl: bool

    @classmethod
    def parse(cls, url: str) -> ChromaServer:
        u = urlparse(url if "://" in url else f"http://{url}")
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"not a Chroma server URL: {url!r} (expected http://host:port)")
        ssl = u.scheme == "https"
        return cls(u.hostname, u.port or (443 if ssl else 8000), ssl)


@dataclass(frozen=True)
class MemoryConfig:
    """Locations and names; everything else (weights of the policy) lives in PolicyConfig."""

    data_dir: Path
    chroma_url: str | None = None
    chroma_token: str | None = None
    collection_prefix: str = "htam"
    embed_device: str = "cpu"

    def __post_init__(self) -> None:
        object.__setattr__(self, "data_dir", Path(self.data_dir).expanduser())  # accept str paths too

    @classmethod
    def from_env(cls, data_dir: str | Path | None = None, chroma_url: str | None = None,
                 namespace: str | None = None) -> MemoryConfig:
        return cls(
            data_dir=Path(data_dir).expanduser() if data_dir else default_data_dir(),
            chroma_url=chroma_url or os.environ.get("HTAM_CHROMA_URL") or None,
            collection_prefix=namespace or os.environ.get("HTAM_MEMORY_NAMESPACE") or "htam",
            chroma_token=os.environ.get("HTAM_CHROMA_TOKEN") or None,
            embed_device=os.environ.get("HTAM_EMBED_DEVICE", "cpu"),
        )

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "transitions.sqlite3"

    @property
    def transitions_path(self) -> Path:
        """The SQLite file the transitions live in: the memory itself, or with a server this host's replica of
        the server's log (one per server and collection prefix, so switching servers never mixes them)."""
        if not self.chroma_url:
            return self.sqlite_path
        srv = ChromaServer.parse(self.chroma_url)
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{srv.host}_{srv.port}_{self.collection_prefix}")
        return self.data_dir / "replicas" / f"{name}.sqlite3"

    @property
    def chroma_path(self) -> Path:
        return self.data_dir / "chroma"

    @property
    def chroma_location(self) -> str:
        """Identifies the Chroma store, so derived-index watermarks are kept per store."""
        return self.chroma_url or f"file:{self.chroma_path.resolve()}"
