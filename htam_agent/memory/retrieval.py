"""Strategy retrieval (HTG level 2): similarity to the state, filtered by direction, backend, operator class and
what the reference contains, minus what the task already did, re-ranked by the outcomes recorded for each
strategy in similar states. Also the learned-notes index.

score = w_similarity * cosine(state text, strategy) + w_outcome * value(strategy | same class, related classes)
        + bottleneck bonus - relaxed penalty
where value() is the policy's class-first shrunk mean reward, so unused strategies rank by similarity alone.

Applicability is strict: a strategy is offered only when it is written for the state's operator class and backend
and (when the reference's operator classes are known) for one of them, and when the task's shapes and the best
kernel's measured state are inside the bounds it states (warp-per-row is not offered for rows of 393,216
floats). Only a generic class (fused, model, other)
widens the search, to strategies written for the kinds of work the reference contains, never to learned cards of
another class. Fewer than k strategies is a better answer than one that does not apply.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .policy import PolicyConfig, describe_stats, tiered_value
from .schema import GENERIC_CLASSES, MemoryState, Note, RetrievedStrategy, Strategy
from .stats import Agg, TransitionIndex, class_split
from .strategy_store import StrategyStore
from .transitions import Event, TransitionStore


@dataclass(frozen=True)
class RetrievalConfig:
    w_similarity: float = 1.0
    w_outcome: float = 1.0
    bottleneck_bonus: float = 0.05
    relaxed_penalty: float = 0.1
    candidates_per_result: int = 4  # nearest neighbours fetched per requested result, before re-ranking
    #: learned cards returned on top of the k strategies: worked examples, kept apart so that they add to the
    #: shipped techniques instead of pushing them out
    learned_k: int = 1


def retrieve_strategies(
    store: StrategyStore,
    index: TransitionIndex,
    strategies: Mapping[str, Strategy],
    direction: str | None,
    state: MemoryState,
    backend: str,
    k: int,
    config: RetrievalConfig | None = None,
    policy: PolicyConfig | None = None,
    exclude: Mapping[str, str] | None = None,
) -> list[RetrievedStrategy]:
    """Top-k strategies for (direction, backend, operator class); direction=None searches all (flat memory).
    ``exclude`` maps strategy ids not to offer (the task already applies them, or they failed here) to why."""
    config = config or RetrievalConfig()
    policy = policy or PolicyConfig()
    if k <= 0:
        return []
    key = state.key
    text = state.text()
    excluded = dict(exclude or {})
    n = max(k * config.candidates_per_result, k + 8) + len(excluded)
    hits = [(h, False) for h in store.query_strategies(text, n, direction=direction, backend=backend,
                                                       op_class=key.op_class)]
    if key.op_class in GENERIC_CLASSES and state.features - GENERIC_CLASSES:
        have = {h.id for h, _ in hits}
        for feature in sorted(state.features - GENERIC_CLASSES):  # the kinds of work the reference holds
            for h in store.query_strategies(text, n, direction=direction, backend=backend, op_class=feature):
                if h.id not in have:
                    have.add(h.id)
                    hits.append((h, True))
    same_w, feat_w, rel_w = class_split(key.as_tuple(), policy.min_similarity, state.features)
    out: list[RetrievedStrategy] = []
    for hit, relaxed in hits:
        s = strategies.get(hit.id)
        if s is None or s.id in excluded:  # index older than the catalog (next sync drops it), or done already
            continue
        if relaxed:
            if s.source == "learned" or not any(s.fits(f, backend, state.features) for f in state.features):
                continue
        elif not s.fits(key.op_class, backend, state.features):
            continue
        if s.applies(state):  # written for other shapes or another state of the best kernel
            continue
        same, related = index.strategy_pooled(s.id, same_w), index.strategy_pooled(s.id, rel_w)
        outcome = tiered_value(_vec(same), _vec(related), policy, _vec(index.strategy_pooled(s.id, feat_w)))
        bonus = config.bottleneck_bonus if key.bottleneck in s.applicability.bottlenecks else 0.0
        score = (config.w_similarity * hit.similarity + config.w_outcome * outcome + bonus
                 - (config.relaxed_penalty if relaxed else 0.0))
        reason = f"similarity {hit.similarity:.2f}"
        if same.n:
            reason += f"; in {key.op_class} states {describe_stats(same.freeze())} -> {outcome:+.2f}"
        if bonus:
            reason += f"; targets {key.bottleneck}-bound"
        if s.source == "learned":
            reason += "; learned from an accepted kernel"
        if relaxed:
            reason += f"; written for the {'/'.join(sorted(s.applicability.op_set() & state.features))} part"
        total = same.freeze()
        out.append(RetrievedStrategy(s, score, hit.similarity, total, reason, relaxed))
    out.sort(key=lambda r: (-r.score, r.strategy.id))
    techniques = [r for r in out if r.strategy.source != "learned"][:k]
    cards = [r for r in out if r.strategy.source == "learned"][:config.learned_k]
    return techniques + cards


def _vec(a: Agg) -> np.ndarray:
    return a.vector()


def count_fitting(strategies: Mapping[str, Strategy], state: MemoryState, backend: str,
                  exclude: Mapping[str, str] | None = None) -> dict[str, tuple[int, int]]:
    """direction -> (strategies that fit the state, those not excluded): the policy's "exhausted" test, computed
    from the strategy records alone (no vector store needed)."""
    out: dict[str, list[int]] = {}
    for s in strategies.values():
        if s.fits(state.key.op_class, backend, state.features) and not s.applies(state):
            c = out.setdefault(s.direction, [0, 0])
            c[0] += 1
            c[1] += s.id not in (exclude or {})
    return {d: (a, b) for d, (a, b) in out.items()}


# ---------------------------------------------------------------------------------------------- notes


def note_text(ev: Event) -> str:
    k = ev.key
    head = (f"{ev.direction} after {ev.prev_direction} on a {k.op_class} operator, {k.bottleneck}-bound, "
            f"{k.status.replace('_', ' ')}, backend {k.backend}")
    if not ev.accepted:
        verdict = f"rejected ({ev.status_after.replace('_', ' ')}): {ev.failed_reason}".rstrip(": ")
    elif ev.gain is not None and ev.speedup_before is None:
        verdict = f"accepted as the task's first kernel, x{math.exp(ev.gain):.2f} over eager"
    elif ev.gain is not None:
        verdict = f"accepted, speedup x{math.exp(ev.gain):.2f} over the previous best"
    else:
        verdict = "accepted"
    strategies = f" Strategies: {', '.join(ev.strategies)}." if ev.strategies else ""
    note = f" Note: {ev.note}" if ev.note else ""
    return f"{head}: {verdict}.{strategies}{note}"


def _watermark_key(store: StrategyStore) -> str:
    return f"watermark:notes:{store.config.chroma_location}:{store.config.collection_prefix}"


#: At most this many of the newest events are scanned for notes in one sync; an older backlog (e.g. after a large
#: import) is skipped: notes are hints for the prompt, the counts live in the statistics.
MAX_NOTES_BACKLOG = 5000


def sync_notes(store: StrategyStore, transitions: TransitionStore, batch: int = 1000) -> int:
    """Index the notes of events recorded since the last sync (events with a failure text or a note).

    A note's id is a hash of its text, so the same lesson recorded many times is embedded and stored once.
    """
    wkey = _watermark_key(store)
    since = int(transitions.get_meta(wkey) or 0)
    if since and store.count_notes() == 0:
        since = 0  # the Chroma side was wiped: rebuild
    since = max(since, transitions.max_event_id() - MAX_NOTES_BACKLOG)
    added = 0
    while True:
        rows = transitions.events(since_id=since, limit=batch)
        if not rows:
            break
        fresh: dict[str, tuple[str, dict[str, object]]] = {}
        for _, e in rows:
            if e.note or (e.failed_reason and not e.accepted):
                text = note_text(e)
                fresh.setdefault(hashlib.sha1(text.encode()).hexdigest()[:20], (text, {
                    "direction": e.direction, "prev_direction": e.prev_direction, "op_class": e.key.op_class,
                    "bottleneck": e.key.bottleneck, "status": e.key.status, "backend": e.key.backend,
                    "accepted": e.accepted, "gain": e.gain if e.gain is not None else 0.0, "event_uid": e.uid}))
        for nid in store.existing_note_ids(list(fresh)):
            del fresh[nid]
        if fresh:
            ids = list(fresh)
            store.upsert_notes(ids, [fresh[i][0] for i in ids], [fresh[i][1] for i in ids])
            added += len(ids)
        since = rows[-1][0]
        transitions.set_meta(wkey, str(since))
    return added


def retrieve_notes(store: StrategyStore, transitions: TransitionStore, state: MemoryState,
                   direction: str | None, k: int) -> list[Note]:
    sync_notes(store, transitions)
    where = {"direction": direction} if direction else None
    return [Note(h.id, h.document, h.similarity, h.metadata) for h in store.query_notes(state.text(), k, where)]
