"""Training the memory that ships from a verdict table (bench/shipped_memory.py), and a fresh memory's real run
on top of it: the protocol's htam lane over the table's problems, exported under shipped names with provenance;
a run in an empty memory loads it, says so in its events, and adds its own steps beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_replay_table import make_table

from htam_agent.bench.replay import TableGateway
from htam_agent.bench.shipped_memory import train_shipped
from htam_agent.bench.table import add_provenance, provenance_entry
from htam_agent.bundled_tasks import SUITE_DIR
from htam_agent.context import RunContext
from htam_agent.memory import shipped
from htam_agent.memory.catalog import load_catalog
from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.htam import HTAMemory
from htam_agent.run import resources


@pytest.mark.slow  # trains a lane over 7 problems and runs the agent (~1-2 min)
def test_train_ship_and_run_on_top(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from htam_agent.agent import run_optimization

    table_path = tmp_path / "bundled_cuda.jsonl"
    table = make_table(table_path)
    add_provenance(table_path, {**provenance_entry(command="make_table (test)", size="default", backend="cuda"),
                                "measured": "2026-11-28T10:00:00Z"})
    out = tmp_path / "pkg" / "cuda.json.gz"
    about = train_shipped(table_path, SUITE_DIR, out, command="pytest train_shipped", log=lambda s: None)
    assert about["table"] == "bundled_cuda" and about["table_date"] == "2026-11-28T10:00:00Z"
    assert about["trained"]["problems"] == len(table.problems) == 7 and about["trained"]["not_evaluated"] == 0
    assert about["trained"]["command"] == "pytest train_shipped" and about["trained"]["commit"]
    f = shipped.read_shipped(out, load_catalog())
    assert len(f.events) == about["events"] > 0 and sum(about["op_classes"].values()) == about["events"]
    assert {e.task_id for e in f.events} <= set(table.problems) and all(e.uid.startswith("shipped:") for e in f.events)

    monkeypatch.setenv("HTAM_SHIPPED_DIR", str(out.parent))
    resources.clear_cache()
    gw = TableGateway(table, "cuda")
    ctx = RunContext(backend="cuda", coder="exemplar", evaluation="replay", max_repairs=0, steps=3,
                     max_evaluations=3, memory_dir=str(tmp_path / "user"), runs_dir=str(tmp_path / "runs"))
    run_optimization(str(SUITE_DIR / "norm_layernorm.py"), ctx, evaluator=gw, run_id="r1")
    resources.clear_cache()
    first = json.loads((tmp_path / "runs" / "r1" / "events.jsonl").read_text().splitlines()[0])
    assert first["event"] == "memory" and first["line"] == (
        f"memory: {about['events']} shipped transitions from the cuda verdict table of 2026-11-28 (loaded now); "
        "your own steps are added on top")
    with HTAMemory(MemoryConfig(tmp_path / "user")) as mem:
        counts = mem.transitions.origin_counts()
    assert counts == {("shipped", "cuda"): about["events"], ("own", "cuda"): gw.calls - gw.misses}
    assert gw.calls - gw.misses > 0
