"""The run's artifact folder: everything a person needs to see what the agent did and reuse what it found.

    <runs_dir>/<run_id>/
      run.json                 task, settings (the context), start time: what --resume reads
      checkpoints.sqlite       LangGraph's SQLite checkpointer (resume after a crash)
      events.jsonl             progress events, one per line, appended as they happen
      step_00/direction.json   chosen direction, its score reasons, alternatives, retrieved strategies
      step_00/cand_0_r0/       one folder per candidate attempt (variant, repair):
          prompt.md reply.md code.py compile.json verdict.json
      best_kernel.py           the best accepted candidate, a ready-to-use ModelNew file
      report.md speedup.png htg_path.png result.json

Writes are atomic (temp file + rename), so a crash never leaves a half-written file, and re-running a
step after a resume overwrites its own files instead of adding duplicates.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any


def new_run_id(task_name: str) -> str:
    """The artifact folder's name: sortable by start time, readable, unique."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{task_name[:40]}-{uuid.uuid4().hex[:6]}"


def atomic_write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"


class RunArtifacts:
    def __init__(self, runs_dir: str | Path, run_id: str) -> None:
        self.root = Path(runs_dir).expanduser() / run_id
        self.run_id = run_id

    # -- layout ----------------------------------------------------------------------------------------
    @property
    def checkpoint_path(self) -> Path:
        return self.root / "checkpoints.sqlite"

    def step_dir(self, step: int) -> Path:
        return self.root / f"step_{step:02d}"

    def candidate_dir(self, step: int, variant: int, repair: int) -> Path:
        return self.step_dir(step) / f"cand_{variant}_r{repair}"

    # -- writers ---------------------------------------------------------------------------------------
    def write_run(self, info: dict[str, Any]) -> Path:
        return atomic_write(self.root / "run.json", _json(info))

    def read_run(self) -> dict[str, Any]:
        path = self.root / "run.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such run (its folder has no run.json); list runs with "
                                    f"`ls {self.root.parent}`")
        return json.loads(path.read_text())

    def event(self, event: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"ts": round(time.time(), 3), **event}, default=str)
        with open(self.root / "events.jsonl", "a") as fh:
            fh.write(line + "\n")

    def write_direction(self, step: int, data: dict[str, Any]) -> Path:
        return atomic_write(self.step_dir(step) / "direction.json", _json(data))

    def write_candidate(self, step: int, variant: int, repair: int, *, prompt: str = "", reply: str = "",
                        code: str | None = None, meta: dict[str, Any] | None = None) -> Path | None:
        d = self.candidate_dir(step, variant, repair)
        atomic_write(d / "prompt.md", prompt or "(no prompt)\n")
        atomic_write(d / "reply.md", reply or "(no reply)\n")
        if meta is not None:
            atomic_write(d / "generation.json", _json(meta))
        if code is None:
            return None
        return atomic_write(d / "code.py", code)

    def write_verdict(self, step: int, variant: int, repair: int, verdict: dict[str, Any],
                      name: str = "verdict.json") -> Path:
        return atomic_write(self.candidate_dir(step, variant, repair) / name, _json(verdict))

    def write_best(self, code: str) -> Path:
        return atomic_write(self.root / "best_kernel.py", code)

    def write_text(self, name: str, text: str) -> Path:
        return atomic_write(self.root / name, text)
