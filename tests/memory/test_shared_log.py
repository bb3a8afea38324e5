"""Transitions shared through a real `chroma run` server: writers on different hosts (here: processes with their
own memory folders) lose nothing, a server outage loses nothing, a reset reaches every replica."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import subprocess_env
from memory_helpers import gain, state
from support.chroma_server import ChromaServerProcess

from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.htam import HTAMemory
from htam_agent.memory.schema import Strategy
from htam_agent.memory.shared_log import LogUnavailable, SharedTransitionStore
from htam_agent.memory.transitions import MemoryStoreError, TransitionStore

WORKER = str(Path(__file__).with_name("memory_worker.py"))
KEY = ("normalization", "memory", "correct_slow", "cuda")


def _host(tmp_path: Path, name: str, url: str, prefix: str) -> HTAMemory:
    return HTAMemory(MemoryConfig(tmp_path / name, chroma_url=url, collection_prefix=prefix))


def _learned(mem: HTAMemory, sid: str, title: str) -> Strategy:
    base = mem.catalog.strategies[0]
    return Strategy.model_validate({**base.model_dump(), "id": sid, "title": title})


@pytest.mark.slow  # fast lane: ~17 s, four writer processes
def test_writers_on_four_hosts_lose_nothing(tmp_path, chroma_server):
    prefix, go, n = f"t{uuid.uuid4().hex[:10]}", tmp_path / "go", 40
    tags = ["h1", "h2", "h3", "h4"]
    procs = [subprocess.Popen([sys.executable, WORKER, "record_shared", str(tmp_path / tag), chroma_server, prefix,
                               str(n), tag, str(go)], env=subprocess_env(), stderr=subprocess.PIPE)
             for tag in tags]
    time.sleep(2.0)  # all are importing and opening; then they write at once
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-3000:]

    # a fifth host that wrote nothing sees every event and every learned strategy
    reader = _host(tmp_path, "reader", chroma_server, prefix)
    events = [e for _, e in reader.transitions.events()]
    assert sorted(e.uid for e in events) == sorted(f"{t}:{i}" for t in tags for i in range(n))
    assert {f"learned_{t}" for t in tags} <= set(reader.strategies())
    # the statistics equal those of one local log holding the same events
    local = TransitionStore(tmp_path / "local.sqlite3")
    local.append_many(events)
    shared_idx, local_idx = reader.transitions.index(), local.index()
    cell = shared_idx.cell("memory_access", "parallel_mapping", KEY)
    assert cell.n == 4 * n and cell == local_idx.cell("memory_access", "parallel_mapping", KEY)
    assert shared_idx.strategy_total("pm_warp_per_row") == local_idx.strategy_total("pm_warp_per_row")
    assert shared_idx.strategy_total("pm_warp_per_row").n == 4 * n
    spans = [(min(e.ts for e in events if e.task_id == t), max(e.ts for e in events if e.task_id == t)) for t in tags]
    assert max(s[0] for s in spans) < min(s[1] for s in spans), "the writers did not overlap; this proves nothing"
    # and each writer's own replica, opened again, has caught up with the others
    for tag in tags:
        with _host(tmp_path, tag, chroma_server, prefix) as m:
            assert m.transitions.count() == 4 * n
            assert m.transitions.pending() == 0
            assert m.transitions.check()["ok"]
    # nothing went to the folders' own (unshared) log
    assert not any((tmp_path / t / "transitions.sqlite3").exists() for t in tags)
    reader.close()


def test_a_late_clock_is_caught_by_the_id_listing(tmp_path, chroma_server):
    prefix = f"t{uuid.uuid4().hex[:10]}"
    a, b = _host(tmp_path, "a", chroma_server, prefix), _host(tmp_path, "b", chroma_server, prefix)
    a.record(state(), "memory_access", [], gain(1.2), uid="now")
    assert b.transitions.count() == 1  # b's watermark is now
    old = a.record(state(), "data_reuse", [], gain(1.1), uid="hour-old")
    # rewrite the second event as if its host's clock were an hour behind: the cheap "recent" read misses it
    col = a.transitions.server.collection()
    got = col.get(ids=["e:hour-old"], include=["documents"])
    col.upsert(ids=["e:hour-old"], documents=got["documents"], metadatas=[{"ts": old.ts - 3600}],
               embeddings=[[1.0]])
    assert sorted(e.uid for _, e in b.transitions.events()) == ["hour-old", "now"]
    a.close()
    b.close()


def test_an_outage_keeps_writes_until_the_server_is_back(tmp_path, caplog):
    server = ChromaServerProcess(tmp_path / "server").start()
    prefix = f"t{uuid.uuid4().hex[:10]}"
    try:
        a, b = _host(tmp_path, "a", server.url, prefix), _host(tmp_path, "b", server.url, prefix)
        a.record(state(), "memory_access", [], gain(1.3), uid="before")
        server.stop()
        with caplog.at_level(logging.WARNING, logger="htam_agent.memory.shared_log"):
            a.record(state(), "data_reuse", [], gain(1.1), uid="during-1")  # no exception: the run goes on
            a.add_strategies([_learned(a, "learned_offline", "written while the server was down")])
        assert "write(s) kept to send later" in caplog.text
        assert a.transitions.pending() == 2 and a.transitions.last_error
        assert a.transitions.index().n_events == 2  # this host still sees its own writes
        assert "unreachable" not in a.stats()["shared"]["server"] and a.stats()["shared"]["pending"] == 2
        server.start()
        a.transitions._retry_at = 0.0  # do not wait out the back-off in a test
        assert a.transitions.count() == 2 and a.transitions.pending() == 0 and a.transitions.last_error is None
        assert sorted(e.uid for _, e in b.transitions.events()) == ["before", "during-1"]
        assert "learned_offline" in b.strategies()
        a.close()
        b.close()
        # a host that cannot reach the server at all is told so when it opens the memory
        server.stop()
        with pytest.raises(MemoryStoreError, match="HTAM_CHROMA_URL"):
            _host(tmp_path, "c", server.url, prefix)
    finally:
        server.stop()


def test_a_reset_reaches_every_replica_and_keeps_unsent_writes(tmp_path, chroma_server, monkeypatch):
    prefix = f"t{uuid.uuid4().hex[:10]}"
    a, b = _host(tmp_path, "a", chroma_server, prefix), _host(tmp_path, "b", chroma_server, prefix)
    for i in range(3):
        a.record(state(), "memory_access", [], gain(1.1), uid=f"old-{i}")
    b.add_strategies([_learned(b, "learned_old", "old")])
    assert b.transitions.count() == 3 and "learned_old" in a.strategies()
    # b records while its link is down (the request fails), so its write waits in its outbox
    real_put = b.transitions.server.put

    def down(*_a, **_k):
        raise LogUnavailable("the Chroma server at test failed to add records (link down)")

    monkeypatch.setattr(b.transitions.server, "put", down)
    b.record(state(), "data_reuse", [], gain(1.2), uid="unsent")
    assert b.transitions.pending() == 1
    a.reset()
    assert a.transitions.count() == 0
    monkeypatch.setattr(b.transitions.server, "put", real_put)
    b.transitions._retry_at = 0.0
    # b notices the new log: the old experience is gone, its unsent write survives and reaches the server
    assert [e.uid for _, e in b.transitions.events()] == ["unsent"] and "learned_old" not in b.strategies()
    assert [e.uid for _, e in a.transitions.events()] == ["unsent"]
    assert isinstance(a.transitions, SharedTransitionStore)
    a.close()
    b.close()


def test_learned_strategy_versions_from_two_hosts_newest_wins(tmp_path, chroma_server):
    prefix = f"t{uuid.uuid4().hex[:10]}"
    a, b = _host(tmp_path, "a", chroma_server, prefix), _host(tmp_path, "b", chroma_server, prefix)
    a.add_strategies([_learned(a, "learned_x", "first version")])
    time.sleep(0.01)
    b.add_strategies([_learned(b, "learned_x", "second version")])
    for m in (a, b):
        assert m.strategies()["learned_x"].title == "second version"
    # both versions are on the server as separate records: no writer replaced another's record
    assert a.transitions.server.count(a.transitions.server.collection()) == 2
    a.close()
    b.close()


def test_memory_show_reports_the_server_and_what_waits(tmp_path, chroma_server):
    from typer.testing import CliRunner

    from htam_agent.cli.memory import app

    prefix = f"t{uuid.uuid4().hex[:10]}"
    with _host(tmp_path, "a", chroma_server, prefix) as a:
        for i in range(2):
            a.record(state(), "memory_access", [], gain(1.1), uid=f"s{i}")
    r = CliRunner().invoke(app, ["--dir", str(tmp_path / "viewer"), "--chroma-url", chroma_server, "--namespace",
                                 prefix, "show", "--what", "edges"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    assert "2 recorded transitions" in r.output and f"collection {prefix}_log" in r.output
    assert "0 write(s) not yet sent, in step" in r.output
