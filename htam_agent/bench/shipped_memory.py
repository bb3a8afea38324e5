"""Train the memory that ships (memory/shipped.py) from a verdict table: the htam lane of the held-out protocol,
trained the protocol's way (memory_cv.train_lane: every problem in id order at 6 evaluations, K=1, learning on,
every evaluation replayed from the table) on all of the table's problems, then exported under shipped names with
its provenance.

Why the protocol's own lane: what ships is exactly what the held-out figures measured a lane of (trained on four
folds there, on all five here), so those figures say what a fresh install can expect of it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .table import load_table, read_provenance


def table_about(table_path: str | Path) -> dict[str, Any]:
    """The provenance the shipped file keeps of its table: its name, and of the table's latest run its commit,
    date (``measured`` where the table was converted from stored verdicts), machine, device and command."""
    prov = read_provenance(table_path).get("runs") or []
    last = prov[-1] if prov else {}
    name = Path(table_path).name.split(".jsonl")[0]
    return {"table": name, "table_file": Path(table_path).name,
            "table_date": last.get("measured") or last.get("date"), "table_commit": last.get("commit"),
            "table_machine": last.get("machine"), "table_device": last.get("device"),
            "table_command": last.get("command"), "table_runs": len(prov)}


def train_shipped(table_path: str | Path, kb: str | Path, out: str | Path, *, command: str,
                  problems: list[str] | None = None, work: str | Path | None = None,
                  log: Callable[[str], None] = print) -> dict[str, Any]:
    """Train the htam lane on the table's problems (all, or `problems`), write the shipped file `out`, and return
    its provenance (the file's ``shipped`` object). `work` keeps the lane and its runs (default: a temporary
    folder, removed afterwards)."""
    from htam_agent.memory.config import MemoryConfig
    from htam_agent.memory.htam import HTAMemory
    from htam_agent.memory.shipped import make_shipped_doc, write_shipped

    from . import memory_cv as cv
    from .table import provenance_entry

    table = load_table(table_path)
    backends = {r.backend for r in table}
    if len(backends) != 1:
        raise ValueError(f"{table_path}: records of several backends {sorted(backends)}; a shipped file is one "
                         "backend's")
    backend = backends.pop()
    chosen = sorted(problems) if problems is not None else table.problems
    unknown = sorted(set(chosen) - set(table.problems))
    if unknown:
        raise ValueError(f"{table_path}: no records of {unknown[:5]}")
    tmp = Path(work) if work else Path(tempfile.mkdtemp(prefix="htam-shipped-"))
    lane, runs = tmp / "lane", tmp / "runs"
    t0 = time.time()
    try:
        gateway = cv.replay_gateway(table, kb)
        cv.train_lane(gateway, cv.METHODS["htam"], chosen, lane, runs, kb, log=log, tag=f"shipped {backend}")
        with HTAMemory(MemoryConfig.from_env(lane)) as mem:
            mem.export(tmp / "export.json")
        export = json.loads((tmp / "export.json").read_text())
        here = provenance_entry(command=command, size=next(iter(table)).size, backend=backend)
        about = {**table_about(table_path),
                 "trained": {"command": command, "commit": here["commit"], "dirty": here["dirty"],
                             "date": here["date"], "machine": here["machine"], "method": "htam",
                             "budget": cv.TRAIN_BUDGET, "k": cv.TRAIN_K, "problems": len(chosen),
                             "gateway_calls": gateway.calls, "not_evaluated": gateway.misses,
                             "wall_s": round(time.time() - t0, 1)}}
        doc = make_shipped_doc(export, backend=backend, provenance=about)
        write_shipped(doc, out)
        return doc["shipped"]
    finally:
        if not work:
            shutil.rmtree(tmp, ignore_errors=True)


__all__ = ["table_about", "train_shipped"]
