"""Export and import of learned experience: one versioned JSON file (optionally .gz).

The file holds the raw events and learned strategies, not aggregates, so an import merges by set union: events
are keyed by uid (importing a file twice adds nothing), counts of disjoint memories add up exactly. The whole
file is validated before anything is written and applied in one transaction: a corrupted, truncated or
mismatched file is refused with a message and the memory stays as it was.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .catalog import Catalog
from .schema import START, Strategy
from .transitions import Event, TransitionStore

FORMAT = "htam-memory"
EXPORT_VERSION = 1


class MemoryFormatError(ValueError):
    """An import file that cannot be used; the memory was not changed."""


@dataclass(frozen=True)
class ImportReport:
    events_in_file: int
    events_added: int
    events_already_present: int
    learned_strategies: int


def _open(path: Path, mode: str) -> Any:
    return gzip.open(path, mode + "t", encoding="utf-8") if path.suffix == ".gz" else open(  # noqa: SIM115
        path, mode, encoding="utf-8")


def export_memory(transitions: TransitionStore, catalog: Catalog, path: str | Path) -> dict[str, int]:
    """Write all events and learned strategies; atomic (temp file + rename), so a crash leaves no half file."""
    path = Path(path)
    events = [e.to_dict() for _, e in transitions.events()]
    learned = [{"id": sid, "ts": ts, "strategy": json.loads(js)} for sid, js, ts in transitions.learned_strategies()]
    doc = {"format": FORMAT, "schema_version": EXPORT_VERSION, "exported_at": time.time(),
           "seed_fingerprint": catalog.fingerprint, "directions": catalog.direction_ids(),
           "events": events, "learned_strategies": learned}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp" + (".gz" if path.suffix == ".gz" else ""),
                               dir=path.parent)
    os.close(fd)
    try:
        with _open(Path(tmp), "w") as f:
            json.dump(doc, f)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return {"events": len(events), "learned_strategies": len(learned)}


def read_export(path: str | Path, catalog: Catalog) -> tuple[list[Event], list[tuple[str, str, float]]]:
    """Parse and validate a whole export file; raises MemoryFormatError with the first problem found."""
    path = Path(path)
    try:
        with _open(path, "r") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise MemoryFormatError(f"{path}: no such file") from None
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise MemoryFormatError(f"{path} is not a readable memory export ({e}); nothing was imported") from e
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise MemoryFormatError(f"{path} is not an htam-agent memory export (no 'format': '{FORMAT}'); "
                                "nothing was imported")
    version = doc.get("schema_version")
    if version != EXPORT_VERSION:
        raise MemoryFormatError(f"{path} has export schema version {version!r}; this htam-agent reads version "
                                f"{EXPORT_VERSION}; nothing was imported")
    known = set(catalog.direction_ids())
    raw_events, raw_learned = doc.get("events"), doc.get("learned_strategies", [])
    if not isinstance(raw_events, list) or not isinstance(raw_learned, list):
        raise MemoryFormatError(f"{path}: 'events' and 'learned_strategies' must be lists; nothing was imported")
    learned: list[tuple[str, str, float]] = []
    seed_ids = {s.id for s in catalog.strategies}
    for i, item in enumerate(raw_learned):
        try:
            s = Strategy(**{**item["strategy"], "source": "learned"})
            ts = float(item["ts"])
            if s.id != item["id"] or s.id in seed_ids or s.direction not in known:
                raise ValueError("id mismatch, a seed id, or an unknown direction")
        except Exception as e:
            raise MemoryFormatError(f"{path}: learned strategy #{i} is invalid ({e}); nothing was imported") from e
        learned.append((s.id, s.model_dump_json(), ts))
    events: list[Event] = []
    for i, item in enumerate(raw_events):
        try:
            if not isinstance(item, dict):
                raise ValueError("not an object")
            ev = Event.from_dict(item)
            if ev.direction not in known or ev.prev_direction not in known | {START}:
                raise ValueError(f"unknown direction {ev.prev_direction!r} -> {ev.direction!r}")
        except Exception as e:
            raise MemoryFormatError(f"{path}: event #{i} is invalid ({e}); nothing was imported") from e
        events.append(ev)
    return events, learned


def import_memory(transitions: TransitionStore, catalog: Catalog, path: str | Path) -> ImportReport:
    """Validate, then merge in one transaction (all or nothing)."""
    events, learned = read_export(path, catalog)
    added, n_learned = transitions.import_all(events, learned)
    return ImportReport(len(events), added, len(events) - added, n_learned)
