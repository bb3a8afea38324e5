"""HTAMemory: the one object the agent's nodes talk to (select a direction, retrieve strategies, record).

SQLite (transitions, learned strategies) opens at construction and is all that selection and recording need;
Chroma and the embedding model open on first retrieval, so `select_directions` and `record` stay light. With a
Chroma server the transitions are a replica of the server's log (shared_log.py), so hosts share them too.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .cards import LEARN_MARGIN, make_card, worth_a_card
from .catalog import Catalog, load_catalog
from .config import MemoryConfig
from .io import ImportReport, export_memory, import_memory
from .policy import PolicyConfig, score_directions
from .retrieval import RetrievalConfig, count_fitting, retrieve_notes, retrieve_strategies, sync_notes
from .schema import (
    START,
    EdgeStats,
    HistoryStep,
    MemoryState,
    Note,
    Outcome,
    RetrievedStrategy,
    ScoredDirection,
    StateKey,
    Strategy,
    TaskMemory,
    as_history,
)
from .shared_log import SharedTransitionStore, open_transitions
from .stats import key_mask
from .strategy_store import StrategyStore
from .transitions import Event


@dataclass(frozen=True)
class EdgeRow:
    """An HTG edge with its statistics summed over the state keys that pass a filter."""

    source: str
    target: str
    stats: EdgeStats
    recent_failures: tuple[str, ...] = ()


@dataclass(frozen=True)
class StrategyRow:
    strategy: Strategy
    stats: EdgeStats


class HTAMemory:
    """Hierarchical Transition-Attended Memory: directions, transitions, strategies, notes.

    The agent's nodes use the methods only; ``config``, ``policy``, ``retrieval``, ``catalog`` and ``transitions``
    are the parts it is built from, for the memory's own CLI, tests and benchmarks."""

    def __init__(self, config: MemoryConfig | None = None, *, policy: PolicyConfig | None = None,
                 retrieval: RetrievalConfig | None = None, catalog: Catalog | None = None) -> None:
        self.config = config or MemoryConfig.from_env()
        self.policy = policy or PolicyConfig()
        self.retrieval = retrieval or RetrievalConfig()
        self.catalog = catalog or load_catalog()
        self.transitions = open_transitions(self.config)
        self._store: StrategyStore | None = None
        self._synced: str | None = None
        self._strategies: tuple[str, dict[str, Strategy]] | None = None

    @classmethod
    def open(cls, data_dir: str | Path | None = None, chroma_url: str | None = None, **kw: object) -> HTAMemory:
        """Open the memory in ``data_dir`` (default: HTAM_MEMORY_DIR or the per-user data directory)."""
        return cls(MemoryConfig.from_env(data_dir, chroma_url), **kw)  # type: ignore[arg-type]

    def close(self) -> None:
        self.transitions.close()

    def __enter__(self) -> HTAMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- knowledge -------------------------------------------------------------------------------------

    @property
    def directions(self) -> list[str]:
        return self.catalog.direction_ids()

    def strategies(self) -> dict[str, Strategy]:
        """Seed strategies plus learned ones (a learned strategy never shadows a seed id); cached until the
        learned set changes (in this or another process)."""
        fp = self.transitions.learned_fingerprint()
        if self._strategies is None or self._strategies[0] != fp:
            out = {s.id: s for s in self.catalog.strategies}
            for sid, js, _ts in self.transitions.learned_strategies():
                out.setdefault(sid, Strategy.model_validate_json(js))
            self._strategies = (fp, out)
        return self._strategies[1]

    def add_strategies(self, strategies: Iterable[Strategy]) -> int:
        """Add or update learned strategies (stored in SQLite, indexed in Chroma on next retrieval)."""
        seed_ids = {s.id for s in self.catalog.strategies}
        known = set(self.directions)
        items = []
        now = time.time()
        for s in strategies:
            if s.id in seed_ids:
                raise ValueError(f"{s.id} is a seed strategy id; give the learned strategy its own id")
            if s.direction not in known:
                raise ValueError(f"strategy {s.id}: unknown direction {s.direction!r}")
            learned = s.model_copy(update={"source": "learned"})
            items.append((learned.id, learned.model_dump_json(), now))
        return self.transitions.put_learned_strategies(items)

    # -- the three calls of the agent ------------------------------------------------------------------

    def select_directions(self, state: MemoryState | StateKey, history: Sequence[str | HistoryStep] = (),
                          seed: int = 0, top: int | None = None, *, task: TaskMemory | None = None,
                          policy: PolicyConfig | None = None, use_transitions: bool = True) -> list[ScoredDirection]:
        """Rank the directions for this state and history (oldest first), each with its reason and evidence.

        ``task`` (what this task did so far) turns on the no-repeat rules: a direction whose last two attempts
        failed steps aside, and one whose fitting strategies are all in the current best (or failed here) too.
        ``policy`` replaces the memory's weights for this call; ``use_transitions=False`` turns off the terms
        learned from recorded transitions (the ablation: priors, state fit, exploration, the task's rules)."""
        weights = policy or self.policy
        if not use_transitions:
            weights = weights.without_transitions()
        key = state.key if isinstance(state, MemoryState) else state
        steps = as_history(history)
        self._check_directions(s.direction for s in steps)
        counts, features = None, frozenset[str]()
        if isinstance(state, MemoryState):
            exclude = task.excluded_strategies(key) if task else {}
            counts = count_fitting(self.strategies(), state, key.backend, exclude)
            features = state.features
        ranked = score_directions(self.catalog.directions, key, steps, self.transitions.index(),
                                  weights, seed, task=task, strategy_counts=counts,
                                  features=features)
        return ranked[:top] if top else ranked

    def retrieve_strategies(self, direction: str | None, state: MemoryState, backend: str | None = None,
                            k: int = 5, *, exclude: Mapping[str, str] | None = None) -> list[RetrievedStrategy]:
        """Top-k strategies of ``direction`` that fit the state (None: all directions), plus up to
        ``retrieval.learned_k`` learned cards; ``exclude`` names strategies not to offer again."""
        if direction is not None:
            self._check_directions([direction])
        store = self.strategy_store()
        return retrieve_strategies(store, self.transitions.index(), self.strategies(), direction, state,
                                   backend or state.key.backend, k, self.retrieval, self.policy, exclude)

    def learn_card(self, state_before: MemoryState, direction: str, *, code: str, plan: str,
                   speedup_after: float | None, built_on: Sequence[str] = (), task_id: str = "", run_id: str = "",
                   step: int | None = None, margin: float = LEARN_MARGIN) -> Strategy | None:
        """Store a strategy card for an accepted kernel that beat the state's best by ``margin`` (None otherwise).

        The card is written for the state's operator class and backend only, embedded on the next retrieval, and
        carried by export/import like every learned strategy."""
        self._check_directions([direction])
        if not code or speedup_after is None or not worth_a_card(state_before, speedup_after, margin):
            return None
        known = self.strategies()
        card = make_card(state_before, direction, self.catalog.direction(direction).name, code=code, plan=plan,
                         speedup_after=speedup_after, built_on=[s for s in built_on if s in known],
                         task_id=task_id, run_id=run_id, step=step)
        if card.id not in known:
            self.add_strategies([card])
        return card

    def learned_cards(self) -> list[Strategy]:
        """Learned strategies, newest first."""
        rows = sorted(self.transitions.learned_strategies(), key=lambda r: -r[2])
        return [Strategy.model_validate_json(js) for _sid, js, _ts in rows]

    def retrieve_notes(self, state: MemoryState, direction: str | None = None, k: int = 3) -> list[Note]:
        """Learned notes (what happened, what went wrong) from similar states, optionally for one direction."""
        return retrieve_notes(self.strategy_store(), self.transitions, state, direction, k)

    def record(self, state_before: MemoryState, direction: str, strategies: Sequence[str], outcome: Outcome, *,
               history: Sequence[str | HistoryStep] = (), note: str = "", task_id: str = "",
               run_id: str = "", uid: str | None = None) -> Event:
        """Record one step: the edge (last history direction -> direction) in state_before, and its outcome.

        Pass a deterministic ``uid`` (e.g. run id and step) to make recording idempotent."""
        steps = as_history(history)
        prev = steps[-1].direction if steps else START
        self._check_directions([direction, *([prev] if prev != START else [])])
        known = self.strategies()
        unknown = [s for s in strategies if s not in known]
        if unknown:
            raise ValueError(f"unknown strategy id(s) {unknown}; use ids returned by retrieve_strategies")
        ev = Event.from_step(state_before, direction, strategies, outcome, prev_direction=prev, note=note,
                             task_id=task_id, run_id=run_id, uid=uid)
        self.transitions.append(ev)  # a uid already recorded (a step re-run after a resume) is skipped
        return ev

    def record_events(self, events: Iterable[Event]) -> int:
        """Bulk insert of prepared events in one transaction (benchmarks, migrations)."""
        return self.transitions.append_many(events)

    # -- inspection ------------------------------------------------------------------------------------

    def edges(self, *, op_class: str | None = None, backend: str | None = None, bottleneck: str | None = None,
              status: str | None = None, direction: str | None = None) -> list[EdgeRow]:
        """Edges with statistics over matching state keys; `direction` keeps edges that touch it."""
        idx = self.transitions.index()
        mask = key_mask(op_class, bottleneck, status, backend)
        rows = []
        for src, dst in idx.pairs():
            if direction and direction not in (src, dst):
                continue
            st = idx.edge_total(src, dst, mask)
            if st.n:
                rows.append(EdgeRow(src, dst, st, tuple(idx.failures.get((src, dst), ()))))
        rows.sort(key=lambda r: (-r.stats.n, r.source, r.target))
        return rows

    def strategy_rows(self, *, op_class: str | None = None, backend: str | None = None,
                      direction: str | None = None) -> list[StrategyRow]:
        idx = self.transitions.index()
        mask = key_mask(op_class=op_class, backend=backend)
        rows = []
        for s in self.strategies().values():
            a = s.applicability
            if ((direction and s.direction != direction) or (backend and backend not in a.backends)
                    or (op_class and op_class not in a.op_set())):
                continue
            rows.append(StrategyRow(s, idx.strategy_total(s.id, mask)))
        order = {d: i for i, d in enumerate(self.directions)}
        rows.sort(key=lambda r: (order.get(r.strategy.direction, 99), -r.stats.n, r.strategy.id))
        return rows

    def stats(self) -> dict[str, object]:
        out: dict[str, object] = {
            "data_dir": str(self.config.data_dir), "events": self.transitions.count(),
            "directions": len(self.directions), "strategies": len(self.strategies()),
            "chroma": self.config.chroma_location, "sqlite_bytes": self.transitions.size_bytes()}
        if isinstance(self.transitions, SharedTransitionStore):  # where the replica is, what waits to be sent
            out["shared"] = self.transitions.status()
        return out

    # -- people's tools --------------------------------------------------------------------------------

    def export(self, path: str | Path) -> dict[str, int]:
        return export_memory(self.transitions, self.catalog, path)

    def import_file(self, path: str | Path) -> ImportReport:
        return import_memory(self.transitions, self.catalog, path)

    def reset(self) -> None:
        """Forget all learned experience (events, learned strategies, notes), the user's own and the shipped
        (memory/shipped.py); the seed knowledge stays."""
        self.transitions.reset()
        self.reindex()

    def forget(self, origin: str, backend: str | None = None) -> tuple[int, int]:
        """Forget one origin's experience, 'shipped' or 'own' (of one backend, or all); the other stays as it was.
        Returns (events, learned strategies) forgotten."""
        removed = self.transitions.forget_origin(origin, backend)
        if any(removed):
            self.reindex()
        return removed

    def reindex(self) -> None:
        """Empty the Chroma side after experience was taken out of the log: the notes and learned cards of what
        is left are indexed again on the next retrieval (the seed strategies too, a few seconds)."""
        self._synced = None
        if self._store is not None or self.config.chroma_url or self.config.chroma_path.exists():
            self.strategy_store(sync=False).reset()

    # -- internals -------------------------------------------------------------------------------------

    def strategy_store(self, sync: bool = True) -> StrategyStore:
        """The Chroma side, opened on first use and kept in step with the seed and learned strategies."""
        if self._store is None:
            self._store = StrategyStore(self.config)
        if sync:
            fp = f"{self.catalog.fingerprint}:{self.transitions.learned_fingerprint()}"
            if fp != self._synced:
                self._store.sync_strategies(list(self.strategies().values()), fp)
                self._synced = fp
        return self._store

    def sync_notes(self) -> int:
        return sync_notes(self.strategy_store(), self.transitions)

    def _check_directions(self, ids: Iterable[str]) -> None:
        known = set(self.directions)
        bad = [d for d in ids if d not in known]
        if bad:
            raise ValueError(f"unknown direction(s) {bad}; known: {', '.join(self.directions)}")
