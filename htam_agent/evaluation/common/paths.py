"""Where the evaluator keeps builds and verdicts (stdlib only; the agent's configuration reads the same)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """`HTAM_CACHE_DIR`, else `$XDG_CACHE_HOME/htam-agent`, else `~/.cache/htam-agent`."""
    env = os.environ.get("HTAM_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "htam-agent"


def build_dir() -> Path:
    """Compiled extensions, one folder per content hash."""
    return Path(os.environ.get("HTAM_BUILD_DIR") or cache_root() / "builds").expanduser()


def verdict_dir() -> Path:
    """The content-addressed verdict store."""
    return Path(os.environ.get("HTAM_VERDICT_DIR") or cache_root() / "verdicts").expanduser()
