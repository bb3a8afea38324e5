"""Strategies and learned notes in Chroma: embedded (PersistentClient) by default, a server by URL when shared.

Chroma holds a derived, re-buildable index: the strategies come from the seed files and SQLite (learned ones),
the notes from the SQLite event log. So a lost or stale Chroma store costs a re-index, never experience.
Applicability is stored as boolean metadata flags (``b_cuda``, ``o_matmul``, ...) because they filter the same way on
the embedded store and on every server version.

An embedded store is for one process at a time (Chroma's own rule); several processes or hosts share a
``chroma run`` server through ``HTAM_CHROMA_URL``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .config import ChromaServer, MemoryConfig
from .schema import BACKENDS, OP_CLASSES, Strategy

_BATCH = 1000
_FINGERPRINT = "htam_fingerprint"
#: Up to this many strategies, filtered nearest-neighbour search runs on an in-process copy of the vectors.
#: Measured with 10k strategies: Chroma's own search with three metadata conditions took 35 ms, the copy < 2 ms.
MIRROR_MAX = 50_000


@dataclass
class Hit:
    id: str
    similarity: float
    metadata: dict[str, Any]
    document: str = ""


@dataclass
class _Mirror:
    """The strategy vectors and filter flags as arrays: exact cosine search with boolean masks."""

    ids: list[str]
    vectors: np.ndarray  # (n, dim), unit length
    direction: np.ndarray  # (n,) str
    backend: dict[str, np.ndarray]
    op: dict[str, np.ndarray]
    metadata: list[dict[str, Any]]

    @classmethod
    def build(cls, pages: list[dict[str, Any]]) -> _Mirror:
        ids = [i for p in pages for i in p["ids"]]
        mds = [dict(m or {}) for p in pages for m in p["metadatas"]]
        vecs = (np.concatenate([np.asarray(p["embeddings"], dtype=np.float32) for p in pages])
                if ids else np.zeros((0, 1), np.float32))
        return cls(ids, vecs, np.array([m.get("direction", "") for m in mds]),
                   {b: np.array([bool(m.get(f"b_{b}")) for m in mds], dtype=bool) for b in BACKENDS},
                   {o: np.array([bool(m.get(f"o_{o}")) for m in mds], dtype=bool) for o in OP_CLASSES}, mds)

    def query(self, q: np.ndarray, n: int, direction: str | None, backend: str | None,
              op_class: str | None) -> list[Hit]:
        mask = np.ones(len(self.ids), dtype=bool)
        if direction:
            mask &= self.direction == direction
        if backend:
            mask &= self.backend[backend]
        if op_class:
            mask &= self.op[op_class]
        idx = np.flatnonzero(mask)
        if n <= 0 or idx.size == 0:
            return []
        sims = self.vectors[idx] @ np.asarray(q, dtype=np.float32)
        part = np.argpartition(-sims, n - 1)[:n] if idx.size > n else np.arange(idx.size)
        top = part[np.argsort(-sims[part], kind="stable")]
        return [Hit(self.ids[idx[t]], float(sims[t]), self.metadata[idx[t]]) for t in top]


def strategy_metadata(s: Strategy) -> dict[str, str | bool]:
    md: dict[str, str | bool] = {"direction": s.direction, "source": s.source}
    md.update({f"b_{b}": b in s.applicability.backends for b in BACKENDS})
    ops = s.applicability.op_set()
    md.update({f"o_{o}": o in ops for o in OP_CLASSES})
    return md


def make_client(config: MemoryConfig) -> Any:
    """A Chroma client for the config: HttpClient when a URL is set, PersistentClient otherwise."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if config.chroma_url:
        srv = ChromaServer.parse(config.chroma_url)
        headers = {"Authorization": f"Bearer {config.chroma_token}"} if config.chroma_token else None
        return chromadb.HttpClient(host=srv.host, port=srv.port, ssl=srv.ssl, headers=headers, settings=settings)
    config.chroma_path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(config.chroma_path), settings=settings)


class StrategyStore:
    """Two collections: ``<prefix>_strategies`` and ``<prefix>_notes``, both embedded with the shipped model."""

    def __init__(self, config: MemoryConfig, client: Any | None = None) -> None:
        from .embeddings import HTAMEmbeddingFunction

        self.config = config
        self.client = client if client is not None else make_client(config)
        self._ef = HTAMEmbeddingFunction(device=config.embed_device)
        self._strategies = self._collection("strategies")
        self._notes = self._collection("notes")
        self._known_fp: str | None = None  # fingerprint of the strategies the collection holds (after a sync)
        self._mirror: _Mirror | None = None
        self._mirror_fp: str | None = None

    def _collection(self, kind: str) -> Any:
        return self.client.get_or_create_collection(
            f"{self.config.collection_prefix}_{kind}", embedding_function=self._ef,
            configuration={"hnsw": {"space": "cosine"}})

    # -- strategies -------------------------------------------------------------------------------------

    def fingerprint(self) -> str | None:
        md = self.client.get_collection(self._strategies.name, embedding_function=self._ef).metadata or {}
        return md.get(_FINGERPRINT)

    def sync_strategies(self, strategies: Sequence[Strategy], fingerprint: str) -> bool:
        """Make the index hold exactly these strategies; a no-op when the fingerprint already matches.

        Incremental: each entry carries a hash of its content, so only new or changed strategies are embedded.
        """
        self._known_fp = fingerprint
        if self.fingerprint() == fingerprint:
            return False
        col = self._strategies
        have: dict[str, str] = {}
        for page in self._pages(col, include=["metadatas"]):
            have.update({i: str((m or {}).get("h", "")) for i, m in zip(page["ids"], page["metadatas"], strict=True)})
        wanted = {s.id: s for s in strategies}
        stale = sorted(set(have) - set(wanted))
        for i in range(0, len(stale), _BATCH):
            col.delete(ids=stale[i:i + _BATCH])
        todo = []
        for s in strategies:
            doc, md = s.document(), strategy_metadata(s)
            h = hashlib.sha1(json.dumps([doc, md], sort_keys=True).encode()).hexdigest()[:16]
            if have.get(s.id) != h:
                todo.append((s.id, doc, {**md, "h": h}))
        for i in range(0, len(todo), _BATCH):
            chunk = todo[i:i + _BATCH]
            col.upsert(ids=[c[0] for c in chunk], documents=[c[1] for c in chunk],
                       metadatas=[c[2] for c in chunk])  # type: ignore[arg-type]
        col.modify(metadata={_FINGERPRINT: fingerprint})
        return True

    def query_strategies(self, text: str, n: int, *, direction: str | None, backend: str | None,
                         op_class: str | None) -> list[Hit]:
        """Nearest strategies that pass the filters (through the in-process mirror when it is enabled)."""
        mirror = self._get_mirror()
        if mirror is not None:
            from .embeddings import embed_query

            return mirror.query(embed_query(text, self.config.embed_device), n, direction, backend, op_class)
        conds: list[dict[str, Any]] = []
        if direction:
            conds.append({"direction": direction})
        if backend:
            conds.append({f"b_{backend}": True})
        if op_class:
            conds.append({f"o_{op_class}": True})
        where = conds[0] if len(conds) == 1 else {"$and": conds} if conds else None
        return self._query(self._strategies, text, n, where)

    def _get_mirror(self) -> _Mirror | None:
        if self._known_fp is None:
            return None
        if self._mirror is None or self._mirror_fp != self._known_fp:
            self._mirror = None
            if self.count_strategies() <= MIRROR_MAX:
                pages = list(self._pages(self._strategies, include=["embeddings", "metadatas"]))
                self._mirror = _Mirror.build(pages)
            self._mirror_fp = self._known_fp
        return self._mirror

    @staticmethod
    def _pages(col: Any, include: list[str], size: int = 5000):  # noqa: ANN205 - generator of Chroma results
        offset = 0
        while True:
            page = col.get(include=include, limit=size, offset=offset)
            if not page["ids"]:
                return
            yield page
            offset += len(page["ids"])

    def count_strategies(self) -> int:
        return int(self._strategies.count())

    # -- notes ------------------------------------------------------------------------------------------

    def upsert_notes(self, ids: Sequence[str], texts: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        for i in range(0, len(ids), _BATCH):
            self._notes.upsert(ids=list(ids[i:i + _BATCH]), documents=list(texts[i:i + _BATCH]),
                               metadatas=list(metadatas[i:i + _BATCH]))

    def existing_note_ids(self, ids: Sequence[str]) -> set[str]:
        return set(self._notes.get(ids=list(ids), include=[])["ids"]) if ids else set()

    def query_notes(self, text: str, n: int, where: dict[str, Any] | None = None) -> list[Hit]:
        return self._query(self._notes, text, n, where)

    def count_notes(self) -> int:
        return int(self._notes.count())

    # -- common -----------------------------------------------------------------------------------------

    def _query(self, col: Any, text: str, n: int, where: dict[str, Any] | None) -> list[Hit]:
        if n <= 0:
            return []
        from .embeddings import embed_query

        r = col.query(query_embeddings=[embed_query(text, self.config.embed_device)], n_results=n, where=where,
                      include=["distances", "metadatas", "documents"])
        ids, dists = r["ids"][0], r["distances"][0]
        mds = (r.get("metadatas") or [[{}] * len(ids)])[0]
        docs = (r.get("documents") or [[""] * len(ids)])[0]
        return [Hit(i, 1.0 - float(d), dict(m or {}), doc or "") for i, d, m, doc in zip(ids, dists, mds, docs,
                                                                                           strict=True)]

    def reset(self) -> None:
        """Drop both collections and create them empty (the strategies re-index on next use)."""
        for kind in ("strategies", "notes"):
            name = f"{self.config.collection_prefix}_{kind}"
            try:
                self.client.delete_collection(name)
            except Exception:  # noqa: BLE001 - absent already: nothing to drop
                pass
        self._strategies = self._collection("strategies")
        self._notes = self._collection("notes")
