"""Transitions shared through a Chroma server: the server holds the append-only log, each host a replica of it.

Why: the SQLite event log is safe for many writers on one file system, but the hosts of a cluster do not share
one. With a server configured (``HTAM_CHROMA_URL``), every event and every learned strategy is also one record
of the collection ``<prefix>_log`` on the server. Records are never updated in place: an event's record id is
its uid, and each version of a learned strategy gets a record of its own (the newest ts wins when read), so
writers on different hosts never touch the same record and none is lost.

Each host reads from its replica (the SQLite layout of transitions.py, under ``replicas/`` in its memory
folder), brought up to date before each read: the server's record count says whether anything is new (one
request), the ids of the records stamped in the last minute usually show what is missing, and a listing of
all ids catches what a writer with a late clock (or a long outage) added; only unseen records are fetched.

A write lands in the replica and in an outbox in one transaction, then goes to the server. If the server
cannot be reached it stays in the outbox and goes with a later write or read, so a network hiccup loses
nothing and never stops a run (a warning says so). Resetting the memory drops the collection; other replicas
see a new collection id and rebuild from the server, keeping what their outboxes still hold.
"""

from __future__ import annotations

import json
import logging
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .config import MemoryConfig
from .stats import TransitionIndex
from .transitions import (
    Event,
    MemoryStoreError,
    TransitionStore,
    clear_experience,
    insert_events,
    put_meta,
    upsert_learned,
)

log = logging.getLogger(__name__)

#: Records written up to this long before the newest one seen are fetched again by the cheap path (hosts'
#: clocks differ by less than this); anything older that is still missing is found by the id listing.
CLOCK_SKEW_S = 60.0
#: After a failed request, reads use the replica alone for this long before asking the server again.
RETRY_AFTER_S = 5.0
_PAGE = 1000
_DDL = (
    "CREATE TABLE IF NOT EXISTS shared_outbox (rid TEXT PRIMARY KEY, doc TEXT NOT NULL, ts REAL NOT NULL) "
    "WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS shared_seen (rid TEXT PRIMARY KEY) WITHOUT ROWID",
)
T = TypeVar("T")
Record = tuple[str, str, float]  # record id, JSON document, ts


class LogUnavailable(RuntimeError):
    """The Chroma server did not answer a request of the log (``gone``: the collection no longer exists)."""

    gone: bool = False


class ServerLog:
    """The collection ``<prefix>_log`` on the server: add records, count them, read them back."""

    def __init__(self, config: MemoryConfig, client: Any | None = None) -> None:
        if not config.chroma_url:
            raise ValueError("a shared log needs a Chroma server URL (HTAM_CHROMA_URL)")
        self.url = config.chroma_url
        self.name = f"{config.collection_prefix}_log"
        self._config = config
        self._client = client

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        try:
            if self._client is None:
                from .strategy_store import make_client

                self._client = make_client(self._config)
            return fn()
        except Exception as e:  # noqa: BLE001 - chromadb and httpx raise many types; all mean "not now"
            err = LogUnavailable(f"the Chroma server at {self.url} failed to {what} ({type(e).__name__}: {e})")
            err.gone = type(e).__name__ == "NotFoundError" or "does not exist" in str(e)
            raise err from e

    def collection(self) -> Any:
        """The log's collection (created if missing); after a reset it has another id."""
        return self._call("open the collection " + self.name, lambda: self._client.get_or_create_collection(
            self.name, embedding_function=None))

    def put(self, col: Any, records: Sequence[Record]) -> None:
        """Add records; writing a record again writes the same content (ids are never reused for others)."""
        for i in range(0, len(records), _PAGE):
            part = records[i:i + _PAGE]
            self._call("add records", lambda p=part: col.upsert(  # type: ignore[misc]
                ids=[r[0] for r in p], documents=[r[1] for r in p], metadatas=[{"ts": r[2]} for r in p],
                embeddings=[[1.0]] * len(p)))  # the log is read by id and ts, never searched by similarity

    def count(self, col: Any) -> int:
        return int(self._call("count records", col.count))

    def since(self, col: Any, ts: float) -> list[str]:
        """Ids of the records stamped ts or later (ids only: most of them are usually known already)."""
        got = self._call("list recent records", lambda: col.get(where={"ts": {"$gte": ts}}, include=[]))
        return list(got["ids"])

    def ids(self, col: Any) -> set[str]:
        out: set[str] = set()
        offset = 0
        while True:
            got = self._call("list record ids", lambda o=offset: col.get(include=[], limit=_PAGE, offset=o))
            out.update(got["ids"])
            if len(got["ids"]) < _PAGE:
                return out
            offset += _PAGE

    def fetch(self, col: Any, ids: Sequence[str]) -> list[Record]:
        out: list[Record] = []
        for i in range(0, len(ids), _PAGE):
            got = self._call("read records", lambda p=list(ids[i:i + _PAGE]): col.get(
                ids=p, include=["documents", "metadatas"]))
            out.extend(_records(got))
        return out

    def drop(self) -> None:
        try:
            self._call("delete the collection " + self.name, lambda: self._client.delete_collection(self.name))
        except LogUnavailable as e:
            if not e.gone:
                raise


def _records(got: dict[str, Any]) -> list[Record]:
    mds = got.get("metadatas") or [None] * len(got["ids"])
    return [(rid, doc or "", float((md or {}).get("ts", 0.0))) for rid, doc, md in
            zip(got["ids"], got["documents"], mds, strict=True)]


def event_record(ev: Event) -> Record:
    return "e:" + ev.uid, json.dumps({"event": ev.to_dict()}, sort_keys=True), ev.ts


def learned_record(sid: str, js: str, ts: float) -> Record:
    return f"s:{sid}:{secrets.token_hex(8)}", json.dumps({"learned": {"id": sid, "json": js, "ts": ts}}), ts


class SharedTransitionStore(TransitionStore):
    """A replica of the server's log that writes through to it; reads see every host's writes."""

    def __init__(self, path: str | Path, server: ServerLog) -> None:
        super().__init__(path)
        self.server = server
        self.last_error: str | None = None
        self._retry_at = 0.0
        self._log_id: str | None = None
        self._col: Any = None
        with self.transaction() as c:
            for stmt in _DDL:
                c.execute(stmt)
        try:
            self.sync(strict=True)
        except LogUnavailable as e:
            self.close()
            raise MemoryStoreError(
                f"{e}. Start it (`chroma run --path DIR --port PORT`), correct HTAM_CHROMA_URL, or unset "
                "HTAM_CHROMA_URL to keep the memory in the local folder alone.") from e

    # -- keeping the replica in step ------------------------------------------------------------------

    def sync(self, *, strict: bool = False) -> bool:
        """Send the outbox, then fetch what other writers added. False (with a warning) when the server did not
        answer: the replica then serves reads and the outbox keeps the writes. ``strict`` raises instead."""
        if not strict and time.monotonic() < self._retry_at:
            return False
        try:
            try:
                self._exchange(self._col or self._lookup())
            except LogUnavailable as e:
                if not e.gone:
                    raise
                self._exchange(self._lookup())  # another host reset the log: the collection was dropped
        except LogUnavailable as e:
            if strict:
                raise
            if self.last_error is None:
                log.warning("%s; reading the local replica %s, %d write(s) kept to send later", e, self.path,
                            self.pending())
            self.last_error = str(e)
            self._retry_at = time.monotonic() + RETRY_AFTER_S
            return False
        if self.last_error is not None:
            log.warning("the Chroma server at %s answers again; the replica is in step", self.server.url)
        self.last_error = None
        return True

    def _lookup(self) -> Any:
        self._col = self.server.collection()
        self._adopt(str(self._col.id))
        return self._col

    def _exchange(self, col: Any) -> None:
        self._push(col)
        n = self.server.count(col)
        if n > self._n_seen():
            recent = self._unseen(self.server.since(col, self._watermark() - CLOCK_SKEW_S))
            self._ingest(self.server.fetch(col, recent))
        if n > self._n_seen():
            self._ingest(self.server.fetch(col, self._unseen(self.server.ids(col))))

    def _adopt(self, log_id: str) -> None:
        """A collection with another id means the log was reset (or this is another server): start over from the
        server, keeping the writes that never reached it."""
        if log_id == self._log_id:
            return
        with self.transaction() as c:
            row = c.execute("SELECT value FROM meta WHERE key='shared:log_id'").fetchone()
            if row is None:
                put_meta(c, "shared:log_id", log_id)
            elif row[0] != log_id:
                self._start_over(c, log_id, keep_outbox=True)
        self._log_id = log_id

    def _start_over(self, c: sqlite3.Connection, log_id: str, *, keep_outbox: bool) -> None:
        """Empty the replica for the log ``log_id`` (inside the caller's transaction); writes still in the
        outbox go back into it when kept, and are sent with the next sync."""
        clear_experience(c)
        c.execute("DELETE FROM shared_seen")
        c.execute("DELETE FROM meta WHERE key='shared:watermark'")
        if keep_outbox:
            for rid, doc, _ts in c.execute("SELECT rid, doc, ts FROM shared_outbox").fetchall():
                _apply(c, rid, doc)
        else:
            c.execute("DELETE FROM shared_outbox")
        put_meta(c, "shared:log_id", log_id)
        self.forget_index()
        self._log_id = log_id

    def _push(self, col: Any) -> None:
        rows = self.query("SELECT rid, doc, ts FROM shared_outbox ORDER BY ts")
        if not rows:
            return
        self.server.put(col, rows)
        with self.transaction() as c:
            c.executemany("DELETE FROM shared_outbox WHERE rid=?", [(r[0],) for r in rows])
            c.executemany("INSERT OR IGNORE INTO shared_seen VALUES (?)", [(r[0],) for r in rows])

    def _ingest(self, records: Sequence[Record]) -> None:
        if not records:
            return
        with self.transaction() as c:
            newest = 0.0
            for rid, doc, ts in records:
                if c.execute("INSERT OR IGNORE INTO shared_seen VALUES (?)", (rid,)).rowcount == 0:
                    continue
                newest = max(newest, ts)
                try:
                    _apply(c, rid, doc)
                except (ValueError, KeyError, TypeError) as e:  # kept as seen: it would fail the same way again
                    log.warning("skipped the malformed record %s of %s: %s", rid, self.server.name, e)
            if newest:
                c.execute("INSERT INTO meta VALUES ('shared:watermark', ?) ON CONFLICT(key) DO UPDATE SET "
                          "value=max(CAST(value AS REAL), excluded.value)", (newest,))

    def _n_seen(self) -> int:
        return int(self.query("SELECT count(*) FROM shared_seen")[0][0])

    def _unseen(self, ids: Iterable[str]) -> list[str]:
        ids = sorted(set(ids))
        seen: set[str] = set()
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            seen.update(r[0] for r in self.query(
                f"SELECT rid FROM shared_seen WHERE rid IN ({', '.join('?' * len(part))})", part))
        return [i for i in ids if i not in seen]

    def _watermark(self) -> float:
        return float(self.get_meta("shared:watermark") or 0.0)

    def pending(self) -> int:
        """Writes not yet on the server."""
        return int(self.query("SELECT count(*) FROM shared_outbox")[0][0])

    def status(self) -> dict[str, object]:
        return {"server": self.server.url, "log": self.server.name, "replica": str(self.path),
                "pending": self.pending(), "last_error": self.last_error}

    # -- writes go to the outbox with the replica, then to the server ---------------------------------

    def on_write(self, c: sqlite3.Connection, events: list[Event], learned: list[tuple[str, str, float]]) -> None:
        records = [event_record(e) for e in events] + [learned_record(*item) for item in learned]
        c.executemany("INSERT OR IGNORE INTO shared_outbox VALUES (?, ?, ?)", records)

    def after_write(self) -> None:
        self.sync()

    def reset(self) -> None:
        """Forget all experience, on the server too; fails (changing nothing) when the server cannot be reached."""
        try:
            self.server.drop()
            col = self.server.collection()
        except LogUnavailable as e:
            raise MemoryStoreError(f"{e}; nothing was reset") from e
        with self.transaction() as c:
            self._start_over(c, str(col.id), keep_outbox=False)
        self._col = col

    def forget_origin(self, origin: str, backend: str | None = None) -> tuple[int, int]:
        raise MemoryStoreError(
            f"the memory is shared through {self.server.url}, whose log is append-only: one origin's experience "
            "cannot be taken out of it; `htam memory reset` resets the whole shared log")

    def replace_shipped(self, backend: str, events: Sequence[Event], learned: Sequence[tuple[str, str, float]],
                        loaded_as: str) -> tuple[int, int, int]:
        raise MemoryStoreError(
            f"the memory is shared through {self.server.url}: shipped experience is loaded into a memory folder "
            "only; to share it, `htam memory import` the shipped file (its events keep their shipped names)")

    # -- reads see the server's log --------------------------------------------------------------------

    def origin_counts(self) -> dict[tuple[str, str], int]:
        self.sync()
        return super().origin_counts()

    def index(self) -> TransitionIndex:
        self.sync()
        return super().index()

    def events(self, since_id: int = 0, limit: int | None = None) -> list[tuple[int, Event]]:
        self.sync()
        return super().events(since_id, limit)

    def max_event_id(self) -> int:
        self.sync()
        return super().max_event_id()

    def count(self) -> int:
        self.sync()
        return super().count()

    def learned_strategies(self) -> list[tuple[str, str, float]]:
        self.sync()
        return super().learned_strategies()

    def learned_fingerprint(self) -> str:
        self.sync()
        return super().learned_fingerprint()


def _apply(c: sqlite3.Connection, rid: str, doc: str) -> None:
    """Write one server record into the replica (inside the caller's transaction)."""
    body = json.loads(doc)
    if rid.startswith("e:"):
        insert_events(c, [Event.from_dict(body["event"])])
    elif rid.startswith("s:"):
        item = body["learned"]
        upsert_learned(c, [(str(item["id"]), str(item["json"]), float(item["ts"]))], ties_win=False)
    else:
        raise ValueError(f"unknown record kind {rid!r}")


def open_transitions(config: MemoryConfig) -> TransitionStore:
    """The memory folder's own log, or with a server this host's replica of the server's log."""
    if not config.chroma_url:
        return TransitionStore(config.sqlite_path)
    return SharedTransitionStore(config.transitions_path, ServerLog(config))
