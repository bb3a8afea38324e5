"""Experience that ships with the package: what the htam lane learned from our own measured verdict tables, loaded
into a user's empty memory so that a fresh install's first steps are not blind.

The file: ``htam_agent/memory/shipped/<backend>.json.gz`` (package data; nothing is downloaded, ever), written by
``benchmarks/train_shipped_memory.py`` (bench/shipped_memory.py). It is a memory export (io.py: events and learned
strategies, validated the same way) in which every event uid starts with ``shipped:`` and every learned strategy id
with ``shipped-`` (transitions.SHIPPED_UID / SHIPPED_CARD), plus a ``shipped`` object with its provenance: the
verdict table (name, commit, date, machine), the training command and commit, and the counts.

Why the names carry the origin: the memory keeps one append-only log, and the policy reads all of it; marking
shipped experience by name keeps it apart without a new column (old and new versions read the same database),
survives export, import and a shared server, and makes it impossible for a user's own step (uuid or run:step
uids, ``learned-`` cards) to overwrite a shipped one or the reverse.

When it loads (`prepare`, called once at the start of every run for the run's backend): the memory is a folder
(a shared server's log is everyone's and append-only), the user holds no events of their own on that backend,
the shipped experience was not turned off (`htam memory reset --shipped`), and the package's file differs from
the one loaded before (a new version of the package replaces its own shipped experience, never the user's).
`htam memory reset` forgets both origins and the next run loads the shipped experience again, as on a fresh
install; `htam memory reset --shipped` forgets it and keeps it off; `htam memory load-shipped` turns it back on.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .io import FORMAT as EXPORT_FORMAT
from .io import MemoryFormatError, read_export
from .transitions import SHIPPED_CARD, SHIPPED_UID, Event, origin_of

if TYPE_CHECKING:
    from .catalog import Catalog
    from .htam import HTAMemory

SHIPPED_FORMAT = "htam-shipped-memory"
SHIPPED_VERSION = 1
_OFF = "shipped:off"


def _loaded_key(backend: str) -> str:
    return f"shipped:loaded:{backend}"


def package_dir() -> Path:
    """Where the shipped files are: ``HTAM_SHIPPED_DIR`` when set (a site's own trained files; the test suite
    points it at an empty folder so that the agent's tests start from an empty memory), else the package's
    ``htam_agent/memory/shipped/``."""
    env = os.environ.get("HTAM_SHIPPED_DIR")
    if env:
        return Path(env).expanduser()
    return Path(str(resources.files("htam_agent.memory") / "shipped"))


def shipped_path(backend: str, root: str | Path | None = None) -> Path | None:
    """The shipped file of a backend (in ``root``, default the package's folder), None when none ships."""
    p = Path(root or package_dir()) / f"{backend}.json.gz"
    return p if p.is_file() else None


# -- making a shipped file (from a trained memory's export) ---------------------------------------------------
def make_shipped_doc(export: Mapping[str, Any], *, backend: str, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """A shipped document from a memory export (io.export_memory's JSON): the backend's events and learned
    strategies under shipped names (uids ``shipped:<backend>:<uid>``, card ids ``shipped-<id>``, the events'
    strategy lists renamed to match), each card's evidence saying where it came from; ``provenance`` becomes the
    ``shipped`` object, with the counts and operator classes added."""
    if export.get("format") != EXPORT_FORMAT:
        raise MemoryFormatError(f"make_shipped_doc takes a memory export (format {EXPORT_FORMAT!r})")
    table = str(provenance.get("table") or "")
    renamed: dict[str, str] = {}
    learned = []
    for item in export.get("learned_strategies") or []:
        card = dict(item["strategy"])
        if backend not in (card.get("applicability") or {}).get("backends", []):
            continue
        new_id = card["id"] if card["id"].startswith(SHIPPED_CARD) else SHIPPED_CARD + card["id"]
        renamed[card["id"]] = new_id
        card["id"] = new_id
        card["evidence"] = {**(card.get("evidence") or {}), "origin": "shipped", "shipped_from": table}
        card["tags"] = list(dict.fromkeys([*(card.get("tags") or []), "shipped"]))
        learned.append({"id": new_id, "ts": item["ts"], "strategy": card})
    events = []
    classes: dict[str, int] = {}
    for e in export.get("events") or []:
        if e.get("backend") != backend:
            continue
        e = dict(e)
        if not str(e["uid"]).startswith(SHIPPED_UID):
            e["uid"] = f"{SHIPPED_UID}{backend}:{e['uid']}"
        e["run_id"] = f"{SHIPPED_UID}{table}:{e.get('run_id') or ''}"
        e["strategies"] = [renamed.get(s, s) for s in e.get("strategies") or []]
        classes[e["op_class"]] = classes.get(e["op_class"], 0) + 1
        events.append(e)
    about = {**provenance, "format": SHIPPED_FORMAT, "version": SHIPPED_VERSION, "backend": backend,
             "events": len(events), "learned_strategies": len(learned), "op_classes": dict(sorted(classes.items()))}
    return {**{k: v for k, v in export.items() if k not in ("events", "learned_strategies")},
            "events": events, "learned_strategies": learned, "shipped": about}


def write_shipped(doc: Mapping[str, Any], path: str | Path) -> Path:
    """Write a shipped document gzip'ed, byte-stable (no timestamp in the gzip header, sorted keys), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
            gz.write(raw)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


# -- reading one ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ShippedFile:
    path: Path
    backend: str
    digest: str                     # sha256 of the file: what was loaded, so a new package's file replaces it
    about: dict[str, Any]           # the document's ``shipped`` object (provenance and counts)
    events: list[Event]
    learned: list[tuple[str, str, float]]

    @property
    def source(self) -> str:
        """'the cuda verdict table of 2026-11-30' (what the run's line names)."""
        return source_text(self.about)


def source_text(about: Mapping[str, Any]) -> str:
    date = str(about.get("table_date") or "")[:10] or "an unknown date"
    return f"the {about.get('backend', '?')} verdict table of {date}"


def read_shipped(path: str | Path, catalog: Catalog, backend: str | None = None) -> ShippedFile:
    """Parse and check a shipped file: an export whose every name is a shipped one, for one backend."""
    path = Path(path)
    events, learned = read_export(path, catalog)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            about = json.load(fh).get("shipped")
    except (OSError, ValueError) as exc:
        raise MemoryFormatError(f"{path}: unreadable ({exc})") from None
    if not isinstance(about, dict) or about.get("format") != SHIPPED_FORMAT:
        raise MemoryFormatError(f"{path}: no 'shipped' object of format {SHIPPED_FORMAT!r}: not a shipped memory "
                                "file (benchmarks/train_shipped_memory.py writes them)")
    want = backend or about.get("backend")
    bad = [e.uid for e in events if origin_of(e.uid) != "shipped" or e.key.backend != want] + \
        [sid for sid, _js, _ts in learned if origin_of(sid) != "shipped"]
    if about.get("backend") != want or bad:
        raise MemoryFormatError(f"{path}: field 'uid'/'id' or 'backend': every event and card of the {want} "
                                f"shipped file must carry a shipped name and that backend (first offenders: "
                                f"{bad[:3]}); write it again with benchmarks/train_shipped_memory.py")
    return ShippedFile(path, str(want), hashlib.sha256(path.read_bytes()).hexdigest(), about, events, learned)


# -- in a user's memory -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LoadReport:
    backend: str
    source: str
    events_added: int
    events_replaced: int
    learned_added: int


def load(mem: HTAMemory, backend: str, *, root: str | Path | None = None) -> LoadReport | None:
    """Put the package's shipped experience for ``backend`` into ``mem`` (replacing an earlier shipped file's, the
    user's own untouched) and turn shipped loading on; None when no file ships for that backend."""
    path = shipped_path(backend, root)
    if path is None:
        return None
    f = read_shipped(path, mem.catalog, backend)
    mark = json.dumps({"digest": f.digest, "source": f.source, "events": len(f.events)})
    removed, added, cards = mem.transitions.replace_shipped(backend, f.events, f.learned, mark)
    mem.transitions.set_meta(_OFF, "")
    if removed:
        mem.reindex()
    return LoadReport(backend, f.source, added, removed, cards)


def drop(mem: HTAMemory, backend: str | None = None) -> tuple[int, int]:
    """Forget the shipped experience (of one backend or all) and keep it off; the user's own stays. Returns
    (events, learned strategies) forgotten."""
    removed = mem.forget("shipped", backend)
    mem.transitions.set_meta(_OFF, "1")
    return removed


def is_off(mem: HTAMemory) -> bool:
    return mem.transitions.get_meta(_OFF) == "1"


def loaded(mem: HTAMemory, backend: str) -> dict[str, Any] | None:
    """What was loaded for a backend (digest, source, events), None if nothing was."""
    raw = mem.transitions.get_meta(_loaded_key(backend))
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def prepare(mem: HTAMemory, backend: str, *, enabled: bool = True, root: str | Path | None = None) -> str:
    """At the start of a run: load the shipped experience when the rules of the module docstring allow it, and
    return the run's one line about where its memory's experience comes from."""
    counts = mem.transitions.origin_counts()
    own = counts.get(("own", backend), 0)
    shared = bool(mem.config.chroma_url)
    path = shipped_path(backend, root)
    now = ""
    if enabled and path is not None and not shared and own == 0 and not is_off(mem):
        before = loaded(mem, backend)
        if before is None or before.get("digest") != hashlib.sha256(path.read_bytes()).hexdigest():
            try:
                rep = load(mem, backend, root=root)
            except MemoryFormatError as exc:
                return f"memory: the shipped experience could not be loaded ({exc}); running without it"
            if rep is not None:
                now = " (loaded now)"
                counts = mem.transitions.origin_counts()
    shipped_n = counts.get(("shipped", backend), 0)
    if shipped_n:
        about = loaded(mem, backend) or {}
        mine = f" and {own} of your own" if own else ""
        return (f"memory: {_n(shipped_n, 'shipped transition')} from {about.get('source') or 'the package'}{now}{mine}; "
                "your own steps are added on top")
    if shared:
        return f"memory: shared through {mem.config.chroma_url}, {_n(own, 'transition')} on {backend}"
    if is_off(mem) and path is not None:
        return (f"memory: {_n(own, 'transition')} of your own on {backend} (shipped experience turned off; "
                "`htam memory load-shipped` brings it back)")
    if path is None and not own:
        return f"memory: empty on {backend} (no experience ships for this backend yet); your steps are its first"
    return f"memory: {_n(own, 'transition')} of your own on {backend}"


def _n(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def shipped_edge_counts(mem: HTAMemory, *, op_class: str | None = None, backend: str | None = None
                        ) -> dict[tuple[str, str], int]:
    """(from, to) -> how many of the edge's transitions are shipped ones (states of this class and backend)."""
    where, args = [f"substr(uid, 1, {len(SHIPPED_UID)}) = ?"], [SHIPPED_UID]
    for col, value in (("op_class", op_class), ("backend", backend)):
        if value:
            where.append(f"{col} = ?")
            args.append(value)
    rows = mem.transitions.query("SELECT prev_direction, direction, count(*) FROM events WHERE "
                                 + " AND ".join(where) + " GROUP BY 1, 2", args)
    return {(str(a), str(b)): int(n) for a, b, n in rows}


def origins(mem: HTAMemory) -> dict[str, Any]:
    """Where the memory's experience came from: events per origin and backend, learned strategies per origin,
    and what each backend's shipped experience is (source, events) where it was loaded."""
    counts = mem.transitions.origin_counts()
    cards: dict[str, int] = {}
    for sid, _js, _ts in mem.transitions.learned_strategies():
        cards[origin_of(sid)] = cards.get(origin_of(sid), 0) + 1
    backends = sorted({b for _o, b in counts})
    files = {p.name.split(".")[0] for p in package_dir().glob("*.json.gz")} if package_dir().is_dir() else set()
    return {
        "events": {o: {b: n for (oo, b), n in sorted(counts.items()) if oo == o} for o in ("shipped", "own")},
        "learned_strategies": {"shipped": cards.get("shipped", 0), "own": cards.get("own", 0)},
        "loaded": {b: loaded(mem, b) for b in sorted(set(backends) | files) if loaded(mem, b)},
        "ships_for": sorted(files),
        "shipped_off": is_off(mem),
    }


__all__ = ["LoadReport", "SHIPPED_FORMAT", "ShippedFile", "drop", "is_off", "load", "loaded", "make_shipped_doc",
           "origins", "package_dir", "prepare", "read_shipped", "shipped_edge_counts", "shipped_path", "source_text",
           "write_shipped"]
