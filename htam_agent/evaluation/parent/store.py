"""Content-addressed verdict store: a verdict is kept under (candidate, task, size, backend, device, evaluator).

One JSON file per key, written atomically, so concurrent writers never corrupt it and stores merge by copying.
Verdicts made on a GPU host (`python -m htam_agent.evaluation batch ... --out verdicts.jsonl`) are imported
where the agent runs, which can then replay a search on real GPU verdicts without a GPU.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from htam_agent.backend_registry import is_cpu

from ..common import gpu, paths
from ..common.verdict import EVALUATOR_VERSION, SCHEMA_VERSION


def candidate_key(candidate_source: str, task_source: str, size: str, backend: str, device: str,
                  extra: dict[str, Any] | None = None) -> str:
    material = json.dumps({
        "candidate": hashlib.sha256(candidate_source.encode()).hexdigest(),
        "task": hashlib.sha256(task_source.encode()).hexdigest(),
        "size": size, "backend": backend, "device": device, "evaluator": EVALUATOR_VERSION,
        "extra": extra or {},
    }, sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


def device_name(backend: str) -> str:
    """The device a verdict belongs to. `HTAM_DEVICE_NAME` overrides it, to replay another host's verdicts.

    Found without initializing CUDA in this process (NVML, as nvidia-smi reads it; nvidia-smi where NVML
    cannot be loaded), so the agent's process stays light and may fork.
    """
    env = os.environ.get("HTAM_DEVICE_NAME")
    if env:
        return env
    if is_cpu(backend):
        from ..backends._devices import cpu_name

        return f"cpu:{cpu_name()}"
    if (name := gpu.device_name(0)) is not None:
        return name
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0"],
                             capture_output=True, text=True, timeout=20)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return "cuda:unknown"


class StoreError(ValueError):
    pass


class VerdictStore:
    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root else paths.verdict_dir()
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None
        return data if data.get("schema") == SCHEMA_VERSION else None

    def put(self, key: str, verdict: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        data = dict(verdict)
        data["key"] = key
        tmp.write_text(json.dumps(data, default=str))
        os.replace(tmp, path)

    def __contains__(self, key: str) -> bool:
        return self._path(key).exists()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for p in sorted(self.root.glob("*/*.json")):
            try:
                yield json.loads(p.read_text())
            except (OSError, ValueError):
                continue

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json"))

    def export_jsonl(self, path: str | Path) -> int:
        n = 0
        with open(path, "w") as f:
            for v in self:
                f.write(json.dumps(v, default=str) + "\n")
                n += 1
        return n

    def import_jsonl(self, path: str | Path) -> int:
        """Import verdicts written elsewhere; every line is validated before anything is written."""
        path = Path(path)
        rows = []
        try:
            lines = path.read_text().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"{path}: cannot read ({exc})") from exc
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                v = json.loads(line)
            except ValueError as exc:
                raise StoreError(f"{path}:{i}: not JSON ({exc}); nothing was imported") from exc
            if not isinstance(v, dict) or "key" not in v or v.get("schema") != SCHEMA_VERSION:
                raise StoreError(f"{path}:{i}: not a verdict of schema {SCHEMA_VERSION} with a 'key'; "
                                 "nothing was imported (was it written by `python -m htam_agent.evaluation batch`?)")
            rows.append(v)
        for v in rows:
            self.put(v["key"], v)
        return len(rows)
