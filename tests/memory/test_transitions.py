"""The SQLite event log: aggregation, concurrent writers in real processes, crash safety, refusal of bad files."""

from __future__ import annotations

import hashlib
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import subprocess_env
from memory_helpers import fail, gain, state

from htam_agent.memory.schema import reward_of
from htam_agent.memory.transitions import (
    SCHEMA_VERSION,
    Event,
    MemoryStoreError,
    TransitionStore,
    clear_experience,
    insert_events,
    put_meta,
    upsert_learned,
)

WORKER = str(Path(__file__).with_name("memory_worker.py"))


def _ev(direction="data_reuse", prev="memory_access", outcome=None, strategies=("dr_smem_tiling_gemm",), **kw):
    return Event.from_step(state(**kw), direction, strategies, outcome or gain(1.5), prev_direction=prev)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_events_aggregate_into_edge_and_strategy_statistics(tmp_path):
    store = TransitionStore(tmp_path / "t.sqlite3")
    store.append(_ev(outcome=gain(2.0)))
    store.append(_ev(outcome=gain(1.0)))
    store.append(_ev(outcome=fail("illegal memory access")))
    idx = store.index()
    cell = idx.cell("memory_access", "data_reuse", ("matmul", "compute", "correct_slow", "cuda"))
    assert (cell.n, cell.improved, cell.failed, cell.n_gain) == (3, 1, 1, 2)
    assert math.isclose(cell.mean_gain, (math.log(2.0) + 0.0) / 2)
    assert cell.sum_reward == pytest.approx(reward_of(True, math.log(2.0)) + 0.0 - 0.5)
    assert list(idx.failures[("memory_access", "data_reuse")]) == ["illegal memory access"]
    assert idx.strategy_total("dr_smem_tiling_gemm").n == 3
    assert idx.edge_total("memory_access", "data_reuse") == cell  # a single key so far
    assert store.check()["ok"]


def test_same_event_uid_is_recorded_once(tmp_path):
    store = TransitionStore(tmp_path / "t.sqlite3")
    ev = _ev()
    assert store.append(ev) is True
    assert store.append(ev) is False
    assert store.count() == 1


def test_index_follows_other_writers_and_resets(tmp_path):
    a = TransitionStore(tmp_path / "t.sqlite3")
    b = TransitionStore(tmp_path / "t.sqlite3")
    a.append(_ev())
    assert b.index().n_events == 1
    a.append(_ev())
    assert b.index().n_events == 2  # incremental: only the new row is read
    a.reset()
    assert b.index().n_events == 0  # the generation changed: b rebuilds
    b.append(_ev())
    assert a.index().n_events == 1


def test_a_subclass_extends_the_log_through_its_public_hooks(tmp_path):
    """What shared_log builds on: its own table written in each write's commit, what it added seen after the
    commit, and the log emptied from inside its own transaction."""

    class Audited(TransitionStore):
        def __init__(self, path):
            super().__init__(path)
            self.after = 0
            with self.transaction() as c:
                c.execute("CREATE TABLE IF NOT EXISTS audit (uid TEXT PRIMARY KEY)")

        def on_write(self, c, events, learned):
            c.executemany("INSERT INTO audit VALUES (?)", [(e.uid,) for e in events])

        def after_write(self):
            self.after += 1

    store = Audited(tmp_path / "t.sqlite3")
    ev = _ev()
    assert store.append(ev) and not store.append(ev)  # the repeat adds nothing: no hook after it
    assert store.query("SELECT uid FROM audit") == [(ev.uid,)] and store.after == 1
    assert store.put_learned_strategies([("s1", "{}", 1.0)]) == 1 and store.after == 2
    assert store.index().n_events == 1
    with store.transaction() as c:
        clear_experience(c)
        insert_events(c, [_ev(), _ev()])
        assert upsert_learned(c, [("s2", "{}", 2.0)], ties_win=False) == [("s2", "{}", 2.0)]
        put_meta(c, "note", "x")
        store.forget_index()
    assert store.index().n_events == 2 and store.get_meta("note") == "x"
    assert [sid for sid, _js, _ts in store.learned_strategies()] == ["s2"]


def test_two_processes_recording_at_once_lose_no_update(tmp_path):
    db, go = tmp_path / "t.sqlite3", tmp_path / "go"
    TransitionStore(db).close()  # created up front; the writers race on inserts, not on creation
    procs = [subprocess.Popen([sys.executable, WORKER, "record", str(db), "200", tag, str(go)], env=subprocess_env())
             for tag in ("p1", "p2")]
    time.sleep(1.0)  # both processes are importing/opening; then release them together
    go.touch()
    for p in procs:
        assert p.wait(timeout=300) == 0
    store = TransitionStore(db)
    assert store.count() == 400
    with sqlite3.connect(db) as c:
        per_task = dict(c.execute("SELECT task_id, count(*) FROM events GROUP BY task_id").fetchall())
        # the two writers really interleaved (not one after the other)
        order = [r[0] for r in c.execute("SELECT task_id FROM events ORDER BY id")]
    assert per_task == {"p1": 200, "p2": 200}
    switches = sum(1 for x, y in zip(order, order[1:], strict=False) if x != y)
    assert switches > 1, "writers did not overlap; the test would prove nothing"
    idx = store.index()
    cell = idx.cell("memory_access", "parallel_mapping", ("normalization", "memory", "correct_slow", "cuda"))
    assert cell.n == 400
    assert idx.strategy_total("pm_warp_per_row").n == 400
    assert store.check()["ok"]


def test_killed_writer_leaves_a_consistent_readable_memory(tmp_path):
    db = tmp_path / "t.sqlite3"
    TransitionStore(db).close()
    batch = 50
    for round_ in range(3):
        before = TransitionStore(db).count()
        p = subprocess.Popen([sys.executable, WORKER, "record_forever", str(db), str(batch), f"r{round_}"],
                             env=subprocess_env())
        reader = TransitionStore(db)
        deadline = time.time() + 120
        while reader.count() < before + 3 * batch:  # several transactions in, then kill -9 mid-run
            assert p.poll() is None and time.time() < deadline
            time.sleep(0.01)
        time.sleep(0.003 * (round_ + 1))
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        reader.close()

        store = TransitionStore(db)  # opens after the crash (WAL recovery)
        report = store.check()
        assert report["ok"], report
        n = store.count()
        with sqlite3.connect(db) as c:
            by_writers = c.execute("SELECT count(*) FROM events WHERE task_id LIKE 'r%'").fetchone()[0]
        assert by_writers % batch == 0, "a transaction was applied in part"
        assert by_writers > before - round_  # the killed writer's committed batches are all there
        idx = store.index()
        assert idx.n_events == n
        for sid in ("ma_vectorized_loads", "pm_warp_per_row", "fr_online_softmax"):
            assert idx.strategy_total(sid).n == by_writers
        assert store.append(_ev())  # and it is writable again
        store.close()


def test_unreadable_file_is_refused_and_left_untouched(tmp_path):
    db = tmp_path / "t.sqlite3"
    db.write_bytes(b"this is not a database, just some bytes" * 100)
    digest = _digest(db)
    with pytest.raises(MemoryStoreError, match="not a readable HTAM memory"):
        TransitionStore(db)
    assert _digest(db) == digest


def test_foreign_sqlite_database_is_refused_and_left_untouched(tmp_path):
    db = tmp_path / "t.sqlite3"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE customers (id INTEGER)")
    digest = _digest(db)
    with pytest.raises(MemoryStoreError, match="not an HTAM memory"):
        TransitionStore(db)
    assert _digest(db) == digest


def test_other_schema_version_is_refused_and_left_untouched(tmp_path):
    db = tmp_path / "t.sqlite3"
    s = TransitionStore(db)
    s.append(_ev())
    s.close()
    with sqlite3.connect(db) as c:
        c.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    digest = _digest(db)
    with pytest.raises(MemoryStoreError, match=f"schema version {SCHEMA_VERSION + 1}"):
        TransitionStore(db)
    assert _digest(db) == digest


def test_vectorized_fold_agrees_with_the_scalar_definitions(tmp_path):
    """stats._row_fields must match schema.reward_of / improved_of for every kind of outcome."""
    from htam_agent.memory.schema import MemoryState, Outcome, StateKey, gain_of, improved_of, reward_of

    store = TransitionStore(tmp_path / "t.sqlite3")
    st = MemoryState(StateKey("scan", "latency", "correct_slow", "cpp"), speedup=1.0)
    outcomes = [Outcome(True, "correct_slow", x) for x in (0.2, 0.995, 1.005, 1.02, 3.0, 50.0)]
    outcomes += [Outcome(True, "near_roofline", None), Outcome(False, "compile_error", None, "nvcc")]
    for o in outcomes:
        store.append(Event.from_step(st, "parallel_mapping", [], o, prev_direction="memory_access"))
    cell = store.index().cell("memory_access", "parallel_mapping", st.key.as_tuple())
    gains = [gain_of(st, o) for o in outcomes]
    assert cell.n == len(outcomes)
    assert cell.improved == sum(improved_of(o.accepted, g) for o, g in zip(outcomes, gains, strict=True))
    assert cell.sum_reward == pytest.approx(sum(reward_of(o.accepted, g) for o, g in zip(outcomes, gains, strict=True)))
    assert cell.failed == 1 and cell.n_gain == 6


def test_a_first_kernel_is_a_baseline_not_a_gain(tmp_path):
    """A task's first accepted kernel (no best before it) is counted, its speedup over eager kept apart
    (n_base/sum_base), never an improvement; the same in the vectorized fold and the strategy cells."""
    from htam_agent.memory.schema import MemoryState, Outcome, StateKey

    store = TransitionStore(tmp_path / "t.sqlite3")
    first = MemoryState(StateKey("normalization", "memory", "none", "cuda"))
    for x in (1.6, 0.5):
        store.append(Event.from_step(first, "parallel_mapping", ["pm_warp_per_row"], Outcome(True, "correct_slow", x)))
    store.append(Event.from_step(first, "parallel_mapping", ["pm_warp_per_row"], Outcome(False, "incorrect")))
    idx = store.index()
    cell = idx.cell("start", "parallel_mapping", first.key.as_tuple())
    assert (cell.n, cell.improved, cell.failed, cell.n_gain, cell.n_base) == (3, 0, 1, 0, 2)
    assert cell.mean_gain is None and math.isclose(cell.base_gain, (math.log(1.6) + math.log(0.5)) / 2)
    strat = idx.strategy_total("pm_warp_per_row")
    assert (strat.n, strat.improved, strat.n_gain, strat.n_base) == (3, 0, 0, 2)
