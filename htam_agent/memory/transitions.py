"""Transition experience in SQLite: an append-only event log, statistics derived by aggregation.

Why an event log: every outcome is one INSERTed row (plus its strategy rows) in one transaction, so two writers
never update the same row and no update is lost; a process killed mid-write leaves either the whole event or
none of it (SQLite's journal), so the memory always opens consistent. WAL mode lets readers run while a writer
writes; ``busy_timeout`` makes a writer wait for the lock instead of failing.

Statistics are folded into an in-process index (stats.py) incrementally: rows are read only past the last id seen (ids
grow in commit order, so the visible rows are always a prefix), and a generation token in ``meta`` tells
readers to rebuild after a reset.

Besides the store's own reads and writes, two layers are public for a store that keeps more tables in the same
database (shared_log.SharedTransitionStore, a replica of a server's log with its outbox):

- on ``TransitionStore``: ``transaction`` and ``query`` (its own tables, on the log's connection and lock),
  the ``on_write`` / ``after_write`` hooks (what every write added, inside and after its commit) and
  ``forget_index`` (after the store was emptied from outside ``reset``);
- the functions that change the log inside a caller's transaction: ``insert_events``, ``upsert_learned``,
  ``clear_experience`` and ``put_meta`` (records from elsewhere go in exactly as local writes do).
"""

from __future__ import annotations

import json
import math
import secrets
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .schema import (
    BACKENDS,
    BOTTLENECKS,
    MEMORY_STATUSES,
    OP_CLASSES,
    START,
    MemoryState,
    Outcome,
    StateKey,
    gain_of,
    is_baseline,
)
from .stats import TransitionIndex

#: Version of the SQLite layout; a store of another version is refused, never rewritten in place.
SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 30_000
#: Experience shipped with the package (memory/shipped.py) is kept in the same log under its own names: event uids
#: start with SHIPPED_UID, learned strategy ids with SHIPPED_CARD. The origin is part of the identity, so it
#: survives export, import and a shared server's log, needs no new column (schema version 1 stays readable both
#: ways), and a user's own uid (uuid4 hex or run:step) or card id (learned-...) can never collide with it.
SHIPPED_UID = "shipped:"
SHIPPED_CARD = "shipped-"

_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    uid TEXT NOT NULL UNIQUE,
    ts REAL NOT NULL,
    task_id TEXT NOT NULL DEFAULT '',
    run_id TEXT NOT NULL DEFAULT '',
    op_class TEXT NOT NULL,
    bottleneck TEXT NOT NULL,
    status TEXT NOT NULL,
    backend TEXT NOT NULL,
    prev_direction TEXT NOT NULL,
    direction TEXT NOT NULL,
    n_strategies INTEGER NOT NULL,
    accepted INTEGER NOT NULL,
    status_after TEXT NOT NULL,
    speedup_before REAL,
    speedup_after REAL,
    gain REAL,
    failed_reason TEXT NOT NULL DEFAULT '',
    note TEXT NOT NULL DEFAULT '',
    state_text TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS events_edge ON events(prev_direction, direction);
CREATE TABLE IF NOT EXISTS event_strategies (
    event_id INTEGER NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    strategy_id TEXT NOT NULL,
    PRIMARY KEY (event_id, strategy_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS event_strategies_sid ON event_strategies(strategy_id);
CREATE TABLE IF NOT EXISTS learned_strategies (id TEXT PRIMARY KEY, json TEXT NOT NULL, ts REAL NOT NULL);
"""

_EVENT_COLS = ("uid", "ts", "task_id", "run_id", "op_class", "bottleneck", "status", "backend",
               "prev_direction", "direction", "n_strategies", "accepted", "status_after", "speedup_before",
               "speedup_after", "gain", "failed_reason", "note", "state_text")


class MemoryStoreError(RuntimeError):
    """The memory's files cannot be used as they are (unreadable, another schema version); nothing was changed."""


@dataclass(frozen=True)
class Event:
    """One recorded step: state before, edge taken, strategies used, verdict after."""

    uid: str
    ts: float
    key: StateKey
    prev_direction: str
    direction: str
    strategies: tuple[str, ...]
    accepted: bool
    status_after: str
    speedup_before: float | None = None
    speedup_after: float | None = None
    gain: float | None = None
    failed_reason: str = ""
    note: str = ""
    state_text: str = ""
    task_id: str = ""
    run_id: str = ""

    @classmethod
    def from_step(cls, state_before: MemoryState, direction: str, strategies: Sequence[str], outcome: Outcome,
                  *, prev_direction: str | None = None, note: str = "", task_id: str = "", run_id: str = "",
                  ts: float | None = None, uid: str | None = None) -> Event:
        return cls(
            uid=uid or uuid.uuid4().hex, ts=time.time() if ts is None else ts, key=state_before.key,
            prev_direction=prev_direction or START, direction=direction,
            strategies=tuple(dict.fromkeys(strategies)), accepted=outcome.accepted,
            status_after=outcome.status, speedup_before=state_before.speedup,
            speedup_after=outcome.speedup_vs_eager, gain=gain_of(state_before, outcome),
            failed_reason=outcome.failed_reason[:500], note=note[:1000], state_text=state_before.description[:1000],
            task_id=task_id, run_id=run_id)

    def row(self) -> tuple[object, ...]:
        k = self.key
        return (self.uid, self.ts, self.task_id, self.run_id, k.op_class, k.bottleneck, k.status, k.backend,
                self.prev_direction, self.direction, len(self.strategies), int(self.accepted), self.status_after,
                self.speedup_before, self.speedup_after, self.gain, self.failed_reason, self.note, self.state_text)

    def to_dict(self) -> dict[str, object]:
        d = dict(zip(_EVENT_COLS, self.row(), strict=True))
        d.pop("n_strategies")
        d["accepted"] = self.accepted
        d["strategies"] = list(self.strategies)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> Event:
        """Validate an exported event (types, vocabulary, finite numbers); raises ValueError."""
        def num(name: str) -> float | None:
            v = d.get(name)
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number or null, got {v!r}")
            return float(v)

        def text(name: str, required: bool = False) -> str:
            v = d.get(name, None if required else "")
            if not isinstance(v, str) or (required and not v):
                raise ValueError(f"{name} must be a{' non-empty' if required else ''} string, got {v!r}")
            return v

        strategies = d.get("strategies", [])
        if not isinstance(strategies, list) or not all(isinstance(s, str) for s in strategies):
            raise ValueError("strategies must be a list of strings")
        accepted = d.get("accepted")
        if not isinstance(accepted, bool):
            raise ValueError(f"accepted must be true or false, got {accepted!r}")
        status_after = text("status_after", True)
        if status_after not in MEMORY_STATUSES:
            raise ValueError(f"unknown status_after {status_after!r}")
        ts = num("ts")
        if ts is None:
            raise ValueError("ts is required")
        return cls(
            uid=text("uid", True), ts=ts,
            key=StateKey(text("op_class", True), text("bottleneck", True), text("status", True),
                         text("backend", True)),
            prev_direction=text("prev_direction", True), direction=text("direction", True),
            strategies=tuple(dict.fromkeys(strategies)), accepted=accepted, status_after=status_after,
            speedup_before=num("speedup_before"), speedup_after=num("speedup_after"), gain=num("gain"),
            failed_reason=text("failed_reason"), note=text("note"), state_text=text("state_text"),
            task_id=text("task_id"), run_id=text("run_id"))


# ---------------------------------------------------------------------------------------------- the store


class TransitionStore:
    """The SQLite event log and the index derived from it. Safe across processes; one connection per object."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._conn = self._open()
        self._index = TransitionIndex()
        self._seen_id = 0
        self._generation: str | None = None

    # -- opening ----------------------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as e:
            raise MemoryStoreError(f"cannot open the memory database {self.path}: {e}") from e
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if existed:
                self._check_version(conn)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("BEGIN IMMEDIATE")
            for stmt in filter(None, (s.strip() for s in _DDL.split(";"))):
                conn.execute(stmt)
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('generation', ?)", (secrets.token_hex(8),))
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('created', ?)", (str(time.time()),))
            conn.execute("COMMIT")
            self._check_version(conn)
        except MemoryStoreError:
            conn.close()
            raise
        except sqlite3.DatabaseError as e:
            conn.close()
            raise MemoryStoreError(
                f"{self.path} is not a readable HTAM memory database ({e}); it was left untouched. "
                "Move it away, or run `htam memory reset` (it keeps the file under another name).") from e
        return conn

    def _check_version(self, conn: sqlite3.Connection) -> None:
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "meta" not in tables:
                if tables:
                    raise MemoryStoreError(
                        f"{self.path} is a SQLite file but not an HTAM memory (tables: {sorted(tables)}); "
                        "it was left untouched.")
                return
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as e:
            raise MemoryStoreError(
                f"{self.path} is not a readable HTAM memory database ({e}); it was left untouched. "
                "Move it away, or run `htam memory reset` (it keeps the file under another name).") from e
        if row is not None and row[0] != str(SCHEMA_VERSION):
            raise MemoryStoreError(
                f"{self.path} has memory schema version {row[0]}, this htam-agent reads version "
                f"{SCHEMA_VERSION}; it was left untouched. Export it with the matching htam-agent version "
                "or start a new memory directory.")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- writing ----------------------------------------------------------------------------------------

    def append(self, event: Event) -> bool:
        """Record one event atomically; False when an event with that uid is already there."""
        return self.append_many([event]) == 1

    def append_many(self, events: Iterable[Event]) -> int:
        """Record events in one transaction (all or none); events whose uid exists are skipped."""
        return self._write(events, (), ties_win=True)[0]

    def put_learned_strategies(self, items: Iterable[tuple[str, str, float]]) -> int:
        """Insert or replace learned strategies (id, json, ts); a newer ts wins on conflict."""
        return self._write((), items, ties_win=True)[1]

    def import_all(self, events: Sequence[Event], learned: Sequence[tuple[str, str, float]]) -> tuple[int, int]:
        """Merge events (by uid) and learned strategies in one transaction: all or nothing."""
        return self._write(events, learned, ties_win=False)

    def _write(self, events: Iterable[Event], learned: Iterable[tuple[str, str, float]], *,
               ties_win: bool) -> tuple[int, int]:
        with self.transaction() as c:
            new = insert_events(c, events)
            changed = upsert_learned(c, learned, ties_win=ties_win)
            self.on_write(c, new, changed)
        if new or changed:
            self.after_write()
        return len(new), len(changed)

    def reset(self) -> None:
        """Forget all experience (events, learned strategies); readers rebuild through the new generation."""
        with self.transaction() as c:  # holds the lock
            clear_experience(c)
            self.forget_index()

    def forget_origin(self, origin: str, backend: str | None = None) -> tuple[int, int]:
        """Forget the events and learned strategies of one origin ('shipped' or 'own'), of one backend or all;
        the other origin stays as it was. Returns (events, learned strategies) removed."""
        with self.transaction() as c:
            removed = clear_origin(c, origin, backend)
            if any(removed):
                self.forget_index()
        return removed

    def replace_shipped(self, backend: str, events: Sequence[Event], learned: Sequence[tuple[str, str, float]],
                        loaded_as: str) -> tuple[int, int, int]:
        """Put a backend's shipped experience in place of the one held (one transaction: all or nothing); every
        event uid and card id must carry the shipped prefix, so the user's own experience is never touched.
        ``loaded_as`` (the shipped file's digest) is kept in meta ``shipped:loaded:<backend>`` in the same commit.
        Returns (events removed, events added, learned strategies added)."""
        bad = [e.uid for e in events if not e.uid.startswith(SHIPPED_UID)] + \
            [sid for sid, _js, _ts in learned if not sid.startswith(SHIPPED_CARD)]
        if bad:
            raise ValueError(f"shipped experience must use shipped names (uids {SHIPPED_UID}..., ids "
                             f"{SHIPPED_CARD}...): {bad[:3]}")
        with self.transaction() as c:
            removed, _ = clear_origin(c, "shipped", backend)
            new = insert_events(c, events)
            changed = upsert_learned(c, learned, ties_win=True)
            put_meta(c, f"shipped:loaded:{backend}", loaded_as)
            self.on_write(c, new, changed)
            if removed:
                self.forget_index()
        if new or changed:
            self.after_write()
        return removed, len(new), len(changed)

    # -- for a store with more tables in the same database (shared_log) ----------------------------------

    def on_write(self, c: sqlite3.Connection, events: list[Event], learned: list[tuple[str, str, float]]) -> None:
        """Hook, inside every write's transaction with what it added: the shared store queues it for the server
        in the same commit, so a write is never in the log without being in the outbox."""

    def after_write(self) -> None:
        """Hook, after a write that added something has committed: the shared store sends it to the server."""

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (all or nothing) on the log's connection: public so that a subclass changes its
        own tables in the same commit as the log rows they describe."""
        with self._lock:
            c = self._conn
            c.execute("BEGIN IMMEDIATE")
            try:
                yield c
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        """Rows of one read statement on the log's connection, under its lock: public so that a subclass reads
        its own tables without a connection of its own."""
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def forget_index(self) -> None:
        """Drop the in-process statistics so the next ``index()`` folds the log from its first row: public for a
        subclass that emptied the log itself (``clear_experience``) inside its own transaction."""
        with self._lock:
            self._index = TransitionIndex()
            self._seen_id = 0

    # -- meta (watermarks of derived indexes) ------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
            return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            put_meta(self._conn, key, value)

    # -- reading ----------------------------------------------------------------------------------------

    def max_event_id(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0])

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM events").fetchone()[0])

    def index(self) -> TransitionIndex:
        """The statistics, brought up to date with rows other processes committed since the last call."""
        with self._lock:
            c = self._conn
            c.execute("BEGIN")  # one read snapshot: an event and its strategy rows are seen together
            try:
                gen = c.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
                gen = gen[0] if gen else ""
                if gen != self._generation:
                    self._index, self._seen_id, self._generation = TransitionIndex(), 0, gen
                rows = c.execute(
                    "SELECT op_class, bottleneck, status, backend, prev_direction, direction, accepted, gain, "
                    "failed_reason, speedup_before, id FROM events WHERE id > ? ORDER BY id",
                    (self._seen_id,)).fetchall()
                srows = c.execute(
                    "SELECT s.event_id, s.strategy_id, e.op_class, e.bottleneck, e.status, e.backend, e.accepted, "
                    "e.gain, e.speedup_before FROM event_strategies s JOIN events e ON e.id = s.event_id "
                    "WHERE s.event_id > ?", (self._seen_id,)).fetchall()
            finally:
                c.execute("COMMIT")
            idx = self._index
            idx.fold(rows)
            for _eid, sid, op, bn, st, be, acc, gain, before in srows:
                idx.add_strategy(sid, (op, bn, st, be), bool(acc), gain, is_baseline(bool(acc), before))
            if rows:
                self._seen_id = rows[-1][-1]
            return idx

    def events(self, since_id: int = 0, limit: int | None = None) -> list[tuple[int, Event]]:
        """Events with their ids, oldest first (for export and the notes index)."""
        with self._lock:
            c = self._conn
            c.execute("BEGIN")
            try:
                q = f"SELECT id, {', '.join(_EVENT_COLS)} FROM events WHERE id > ? ORDER BY id"
                rows = c.execute(q + (f" LIMIT {int(limit)}" if limit else ""), (since_id,)).fetchall()
                last = rows[-1][0] if rows else since_id
                strat: dict[int, list[str]] = {}
                for eid, sid in c.execute(
                        "SELECT event_id, strategy_id FROM event_strategies WHERE event_id > ? AND event_id <= ?",
                        (since_id, last)):
                    strat.setdefault(eid, []).append(sid)
            finally:
                c.execute("COMMIT")
        out = []
        for r in rows:
            d = dict(zip(_EVENT_COLS, r[1:], strict=True))
            out.append((r[0], Event(
                uid=d["uid"], ts=d["ts"], key=StateKey(d["op_class"], d["bottleneck"], d["status"], d["backend"]),
                prev_direction=d["prev_direction"], direction=d["direction"],
                strategies=tuple(sorted(strat.get(r[0], []))), accepted=bool(d["accepted"]),
                status_after=d["status_after"], speedup_before=d["speedup_before"],
                speedup_after=d["speedup_after"], gain=d["gain"], failed_reason=d["failed_reason"],
                note=d["note"], state_text=d["state_text"], task_id=d["task_id"], run_id=d["run_id"])))
        return out

    def origin_counts(self) -> dict[tuple[str, str], int]:
        """(origin, backend) -> events: 'shipped' (loaded from the package) or 'own' (this user's steps and
        imports)."""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_ORIGIN_SQL}, backend, count(*) FROM events GROUP BY 1, 2").fetchall()
        return {(str(o), str(b)): int(n) for o, b, n in rows}

    def learned_strategies(self) -> list[tuple[str, str, float]]:
        with self._lock:
            return [(r[0], r[1], r[2]) for r in
                    self._conn.execute("SELECT id, json, ts FROM learned_strategies ORDER BY id")]

    def learned_fingerprint(self) -> str:
        """Changes whenever the learned strategies change (a token bumped in the same transaction): one row read,
        where counting the table costs milliseconds at 10k strategies."""
        return self.get_meta("learned_version") or ""

    def check(self) -> dict[str, object]:
        """Integrity report: SQLite's own check and the invariants of the log (used by tests and `show`)."""
        with self._lock:
            c = self._conn
            integrity = c.execute("PRAGMA integrity_check").fetchone()[0]
            fk = c.execute("PRAGMA foreign_key_check").fetchall()
            mismatched = c.execute(
                "SELECT count(*) FROM events e WHERE e.n_strategies != "
                "(SELECT count(*) FROM event_strategies s WHERE s.event_id = e.id)").fetchone()[0]
            bad_vocab = c.execute(
                f"SELECT count(*) FROM events WHERE op_class NOT IN ({_q(OP_CLASSES)}) "
                f"OR bottleneck NOT IN ({_q(BOTTLENECKS)}) OR status NOT IN ({_q(MEMORY_STATUSES)}) "
                f"OR backend NOT IN ({_q(BACKENDS)})").fetchone()[0]
        return {"integrity": integrity, "foreign_key_errors": len(fk), "events_missing_strategies": mismatched,
                "bad_vocabulary": bad_vocab, "ok": integrity == "ok" and not fk and not mismatched and not bad_vocab}

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())


def set_aside(path: str | Path) -> Path:
    """Rename an unusable database (and its WAL files) out of the way, keeping it for inspection."""
    path = Path(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    kept = path.with_name(f"{path.name}.unreadable-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(path) + suffix)
        if src.exists():
            src.rename(Path(str(kept) + suffix))
    return kept


def _q(values: Iterable[str]) -> str:
    return ", ".join(f"'{v}'" for v in values)


# Changes inside a caller's transaction: the store's writes are made of these, and a replica (shared_log) applies
# the server's records with them, so a record from elsewhere lands exactly as a local write would.

def clear_experience(c: sqlite3.Connection) -> None:
    """Delete all experience inside the caller's transaction and start a new generation: public so that a replica
    empties itself with the same statements as ``reset`` when its server's log was reset."""
    c.execute("DELETE FROM event_strategies")
    c.execute("DELETE FROM events")
    c.execute("DELETE FROM learned_strategies")
    c.execute("DELETE FROM meta WHERE key LIKE 'watermark:%'")
    c.execute("DELETE FROM meta WHERE key LIKE 'shipped:loaded:%'")  # shipped experience loads again, as fresh
    c.execute("UPDATE meta SET value=? WHERE key='generation'", (secrets.token_hex(8),))
    _bump_learned(c)


def origin_of(uid_or_id: str) -> str:
    """'shipped' for an event uid or learned strategy id from the package's shipped experience, else 'own'."""
    return "shipped" if uid_or_id.startswith((SHIPPED_UID, SHIPPED_CARD)) else "own"


_ORIGIN_SQL = f"CASE WHEN substr(uid, 1, {len(SHIPPED_UID)}) = '{SHIPPED_UID}' THEN 'shipped' ELSE 'own' END"


def clear_origin(c: sqlite3.Connection, origin: str, backend: str | None = None) -> tuple[int, int]:
    """Delete one origin's events and learned strategies (of one backend, or all) inside the caller's
    transaction; when anything went, a new generation (readers rebuild their statistics) and the notes'
    watermarks dropped (the notes index is rebuilt from what stays). Returns (events, learned) removed."""
    if origin not in ("shipped", "own"):
        raise ValueError(f"origin {origin!r}: expected 'shipped' or 'own'")
    where = f"{_ORIGIN_SQL} = ?" + (" AND backend = ?" if backend else "")
    ids = [r[0] for r in c.execute(f"SELECT id FROM events WHERE {where}", (origin, *([backend] if backend else [])))]
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ", ".join("?" * len(chunk))
        c.execute(f"DELETE FROM event_strategies WHERE event_id IN ({marks})", chunk)
        c.execute(f"DELETE FROM events WHERE id IN ({marks})", chunk)
    cards = []
    for sid, js in c.execute("SELECT id, json FROM learned_strategies").fetchall():
        if origin_of(sid) != origin:
            continue
        if backend:
            backends = (json.loads(js).get("applicability") or {}).get("backends") or []
            if backend not in backends:
                continue
        cards.append(sid)
    c.executemany("DELETE FROM learned_strategies WHERE id = ?", [(sid,) for sid in cards])
    if origin == "shipped" and backend:
        c.execute("DELETE FROM meta WHERE key = ?", (f"shipped:loaded:{backend}",))
    elif origin == "shipped":
        c.execute("DELETE FROM meta WHERE key LIKE 'shipped:loaded:%'")
    if ids or cards:
        c.execute("DELETE FROM meta WHERE key LIKE 'watermark:%'")
        c.execute("UPDATE meta SET value=? WHERE key='generation'", (secrets.token_hex(8),))
        _bump_learned(c)
    return len(ids), len(cards)


def put_meta(c: sqlite3.Connection, key: str, value: str) -> None:
    """Set one ``meta`` value inside the caller's transaction: public so that a replica records which server log it
    copies in the same commit that rebuilds it."""
    c.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, value))


def _bump_learned(c: sqlite3.Connection) -> None:
    put_meta(c, "learned_version", secrets.token_hex(8))


_INSERT_EVENT = (f"INSERT OR IGNORE INTO events ({', '.join(_EVENT_COLS)}) "
                 f"VALUES ({', '.join('?' * len(_EVENT_COLS))})")


def insert_events(c: sqlite3.Connection, events: Iterable[Event]) -> list[Event]:
    """Insert events and their strategy rows inside the caller's transaction; returns the ones that were new
    (a uid already there is skipped): public so that a replica applies the server's events as local writes."""
    added = []
    for ev in events:
        cur = c.execute(_INSERT_EVENT, ev.row())
        if cur.rowcount:
            added.append(ev)
            c.executemany("INSERT INTO event_strategies VALUES (?, ?)", [(cur.lastrowid, s) for s in ev.strategies])
    return added


def upsert_learned(c: sqlite3.Connection, items: Iterable[tuple[str, str, float]], *,
                   ties_win: bool) -> list[tuple[str, str, float]]:
    """Insert or replace learned strategies inside the caller's transaction, the newer ts winning (and an equal
    ts too when ``ties_win``); returns the items that changed a row: public so that a replica merges the
    server's learned strategies as an import does."""
    cond = ">=" if ties_win else ">"
    changed = []
    for sid, js, ts in items:
        cur = c.execute(
            "INSERT INTO learned_strategies VALUES (?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            f"json=excluded.json, ts=excluded.ts WHERE excluded.ts {cond} learned_strategies.ts", (sid, js, ts))
        if cur.rowcount:
            changed.append((sid, js, ts))
    if changed:
        _bump_learned(c)
    return changed
