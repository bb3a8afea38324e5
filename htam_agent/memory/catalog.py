"""The seed knowledge shipped with the package: directions (HTG level 1) and strategies (level 2).

Read from ``htam_agent/memory/seed/*.json`` through importlib.resources (works from a wheel or a checkout), validated
once per process. A content fingerprint tells the strategy index when it must re-index after an upgrade.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from .schema import Direction, Strategy

SEED_PACKAGE = "htam_agent.memory"


@dataclass(frozen=True)
class Catalog:
    directions: tuple[Direction, ...]
    strategies: tuple[Strategy, ...]
    fingerprint: str

    def direction(self, direction_id: str) -> Direction:
        for d in self.directions:
            if d.id == direction_id:
                return d
        raise KeyError(f"unknown direction {direction_id!r}; known: {', '.join(d.id for d in self.directions)}")

    def direction_ids(self) -> list[str]:
        return [d.id for d in self.directions]


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """Directions and strategies from the seed files; raises ValueError naming the file on a bad entry."""
    root = resources.files(SEED_PACKAGE) / "seed"
    h = hashlib.sha256()
    files = sorted((f for f in root.iterdir() if f.name.endswith(".json")), key=lambda f: f.name)
    directions: list[Direction] = []
    strategies: list[Strategy] = []
    for f in files:
        raw = f.read_bytes()
        h.update(f.name.encode() + b"\0" + raw)
        data = json.loads(raw)
        try:
            if f.name == "directions.json":
                directions = [Direction(**d) for d in data["directions"]]
            elif f.name.startswith("strategies_"):
                strategies.extend(Strategy(**s) for s in data["strategies"])
        except Exception as e:  # pydantic ValidationError or KeyError: say which file
            raise ValueError(f"invalid seed file {f.name}: {e}") from e
    ids = {d.id for d in directions}
    seen: set[str] = set()
    for s in strategies:
        if s.direction not in ids:
            raise ValueError(f"seed strategy {s.id} names unknown direction {s.direction!r}")
        if s.id in seen:
            raise ValueError(f"duplicate seed strategy id {s.id}")
        seen.add(s.id)
    return Catalog(tuple(directions), tuple(strategies), h.hexdigest()[:16])
