"""A finished run keeps only its last checkpoint: checked on a real SqliteSaver with a small graph."""

from __future__ import annotations

import operator
import sqlite3
from contextlib import closing
from typing import Annotated, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from htam_agent.agent import prune_checkpoints
from htam_agent.context import ConfigError, RunContext


class _S(TypedDict):
    log: Annotated[list[str], operator.add]


def _graph(saver: SqliteSaver):
    b = StateGraph(_S)
    for name in ("a", "b", "c"):
        b.add_node(name, lambda s, n=name: {"log": [n * 20_000]})
    b.add_edge(START, "a")
    b.add_edge("a", "b")
    b.add_edge("b", "c")
    b.add_edge("c", END)
    return b.compile(checkpointer=saver)


def test_prune_keeps_the_last_checkpoint_of_the_thread_only(tmp_path):
    path = tmp_path / "checkpoints.sqlite"
    count = "SELECT count(*) FROM checkpoints WHERE thread_id=?"
    with closing(sqlite3.connect(path, check_same_thread=False)) as conn:
        g = _graph(SqliteSaver(conn))
        g.invoke({"log": []}, {"configurable": {"thread_id": "run-1"}})
        before = conn.execute(count, ("run-1",)).fetchone()[0]
        assert before >= 4
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size_before = _on_disk(path)
        assert prune_checkpoints(conn, "run-1") == before - 1
        assert conn.execute(count, ("run-1",)).fetchone()[0] == 1
        assert _on_disk(path) < size_before / 2
        snap = g.get_state({"configurable": {"thread_id": "run-1"}})
        assert snap.values["log"] == ["a" * 20_000, "b" * 20_000, "c" * 20_000] and not snap.next
        # another thread in the same file is not touched
        g.invoke({"log": []}, {"configurable": {"thread_id": "other"}})
        assert prune_checkpoints(conn, "run-1") == 0
        assert conn.execute(count, ("other",)).fetchone()[0] == before


def _on_disk(path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def test_keep_checkpoints_setting(monkeypatch):
    assert RunContext().keep_checkpoints is False
    monkeypatch.setenv("HTAM_KEEP_CHECKPOINTS", "yes")
    assert RunContext.from_env().keep_checkpoints is True
    monkeypatch.setenv("HTAM_KEEP_CHECKPOINTS", "maybe")
    with pytest.raises(ConfigError, match="HTAM_KEEP_CHECKPOINTS"):
        RunContext.from_env()
