"""Environment for the helper processes tests start: the repository importable however pytest was started."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def child_env(base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    """`base` (default: this process's environment) with the repository first on PYTHONPATH, plus `extra`.

    A script run as `python tests/.../x.py` gets its own folder on sys.path, not the repository's root;
    this puts the root there instead of each script inserting it into sys.path itself.
    """
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra)
    return env
