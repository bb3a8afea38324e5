"""Direction selection on the HTG: score every direction for the current state and history, with reasons.

score(d) = w_prior * prior(d | operator class)                       seed knowledge
         + w_state * fit(d | bottleneck, status)                     seed knowledge
         + w_edge  * sum_i alpha_i * value(h_i -> d | similar states) transitions, attended over the history
         + w_similar * value(* -> d | similar states)                 what worked here regardless of the path
         + w_explore * sqrt(log(1 + N) / (1 + n_d))                   rarely tried directions
         - w_fail * sum_i decay^i [h_i = d and h_i failed]            directions that just failed

History position i = 0 is the latest step; alpha_i = decay^i, normalized. value() pools the recorded outcomes of
an edge over state keys weighted by their similarity to the current one, and is the mean reward (clipped log
gain, a fixed cost per rejected candidate) times a confidence n / (n + shrinkage): no evidence means zero, so an
empty memory ranks by the priors alone. Pure function of its inputs; the seed only breaks exact ties.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from .schema import (
    FAILING_STATUSES,
    START,
    WORKING_STATUSES,
    Direction,
    EdgeStats,
    HistoryStep,
    ScoredDirection,
    StateKey,
)
from .transitions import Agg, KeyT, TransitionIndex

# Operator classes that share kernel structure, so experience transfers between them in part.
_OP_AFFINITY: dict[frozenset[str], float] = {
    frozenset({"reduction", "normalization"}): 0.6,
    frozenset({"reduction", "pooling"}): 0.4,
    frozenset({"reduction", "scan"}): 0.4,
    frozenset({"normalization", "attention"}): 0.3,
    frozenset({"matmul", "convolution"}): 0.5,
    frozenset({"matmul", "attention"}): 0.5,
    frozenset({"convolution", "pooling"}): 0.3,
    frozenset({"elementwise", "fused"}): 0.4,
    frozenset({"fused", "model"}): 0.5,
    frozenset({"matmul", "fused"}): 0.3,
    frozenset({"convolution", "fused"}): 0.3,
    frozenset({"normalization", "fused"}): 0.3,
}


def op_affinity(a: str, b: str) -> float:
    if a == b:
        return 1.0
    if "other" in (a, b):
        return 0.1
    return _OP_AFFINITY.get(frozenset((a, b)), 0.0)


def state_similarity(a: KeyT, b: KeyT) -> float:
    """1 for the same key; operator class dominates, then status, bottleneck and backend."""
    op = op_affinity(a[0], b[0])
    if op == 0.0:
        return 0.0
    bn = 1.0 if a[1] == b[1] else 0.6 if "unknown" in (a[1], b[1]) else 0.4
    if a[2] == b[2]:
        st = 1.0
    elif {a[2], b[2]} <= FAILING_STATUSES or {a[2], b[2]} <= WORKING_STATUSES:
        st = 0.5
    else:
        st = 0.25
    be = 1.0 if a[3] == b[3] else 0.6
    return op * bn * st * be


@dataclass(frozen=True)
class PolicyConfig:
    """Weights of the score; set one to 0 for an ablation (e.g. w_edge=w_similar=0: priors only, no memory)."""

    w_prior: float = 1.0
    w_state: float = 1.0
    w_edge: float = 2.0
    w_similar: float = 1.0
    w_explore: float = 0.15
    w_fail: float = 0.6
    history_decay: float = 0.5
    history_len: int = 4
    shrinkage: float = 2.0
    min_similarity: float = 0.05
    tie_jitter: float = 1e-6


@dataclass
class Pooled:
    """Similarity-weighted statistics of one edge (effective counts are sums of similarities)."""

    agg: Agg

    @property
    def n(self) -> float:
        return float(self.agg.n)

    def mean_reward(self) -> float:
        return self.agg.sum_reward / self.agg.n if self.agg.n else 0.0

    def value(self, shrinkage: float) -> float:
        return self.agg.sum_reward / (self.agg.n + shrinkage) if self.agg.n else 0.0

    def stats(self) -> EdgeStats:
        return self.agg.freeze()


class _Pooler:
    """Pools cells of the index around one state key, caching the similarities."""

    def __init__(self, key: KeyT, min_sim: float) -> None:
        self.key, self.min_sim = key, min_sim
        self._sim: dict[KeyT, float] = {}

    def sim(self, other: KeyT) -> float:
        s = self._sim.get(other)
        if s is None:
            s = state_similarity(self.key, other)
            self._sim[other] = s
        return s

    def pool(self, cells: dict[KeyT, Agg] | None) -> Pooled:
        out = Agg()
        for k, a in (cells or {}).items():
            w = self.sim(k)
            if w >= self.min_sim:
                out.merge(a, w)
        return Pooled(out)


def describe_stats(st: EdgeStats) -> str:
    if not st.n:
        return "no record"
    parts = [f"{st.n:.1f} tries" if st.n % 1 else f"{int(st.n)} tries",
             f"{st.success_rate:.0%} improved", f"{st.failed / st.n:.0%} failed"]
    if st.mean_gain is not None:
        parts.append(f"mean gain x{math.exp(st.mean_gain):.2f}")
    return ", ".join(parts)


def bottleneck_fit(direction: Direction, bottleneck: str) -> float:
    if not direction.bottlenecks:
        return 0.5  # direction indifferent to the bottleneck (e.g. correctness)
    if bottleneck in direction.bottlenecks:
        return 1.0
    return 0.5 if bottleneck == "unknown" else 0.0


def score_directions(
    directions: Sequence[Direction],
    key: StateKey,
    history: Sequence[HistoryStep],
    index: TransitionIndex | None,
    config: PolicyConfig | None = None,
    seed: int = 0,
) -> list[ScoredDirection]:
    """Rank all directions, best first, each with its score components and a readable reason."""
    cfg = config or PolicyConfig()
    kt = key.as_tuple()
    pooler = _Pooler(kt, cfg.min_similarity)
    recent = list(reversed(history))[: max(1, cfg.history_len)]  # recent[0] = latest step
    sources = [(s.direction, cfg.history_decay ** i) for i, s in enumerate(recent)] or [(START, 1.0)]
    total_alpha = sum(a for _, a in sources)
    rng = random.Random(seed)

    pooled_into = {d.id: pooler.pool(index.into.get(d.id)) if index else Pooled(Agg()) for d in directions}
    n_total = sum(p.n for p in pooled_into.values())

    out: list[ScoredDirection] = []
    for d in directions:
        prior = d.prior(key.op_class)
        fit = 0.5 * d.affinity(key.status) + 0.5 * bottleneck_fit(d, key.bottleneck)
        reasons = [f"prior {prior:.2f} for {key.op_class}",
                   f"fit {fit:.2f} ({key.bottleneck}-bound, {key.status.replace('_', ' ')})"]
        edge_val, evidence = 0.0, 0.0
        if index is not None:
            for pos, (src, alpha) in enumerate(sources):
                p = pooler.pool(index.edges.get((src, d.id)))
                if p.n:
                    v = p.value(cfg.shrinkage)
                    edge_val += alpha / total_alpha * v
                    evidence += p.n
                    when = "at the start" if src == START else f"after {src}" + (
                        " (latest)" if pos == 0 else f" ({pos + 1} steps back)")
                    reasons.append(f"{when} in similar states: {describe_stats(p.stats())} -> {v:+.2f}")
        into = pooled_into[d.id]
        similar_val = into.value(cfg.shrinkage)
        if into.n:
            reasons.append(f"any path, similar states: {describe_stats(into.stats())} -> {similar_val:+.2f}")
        explore = math.sqrt(math.log1p(n_total) / (1.0 + into.n)) if n_total else 0.0
        if explore:
            reasons.append(f"exploration {cfg.w_explore * explore:+.2f} (tried {into.n:.1f} of {n_total:.1f})")
        fail = sum(cfg.history_decay ** i for i, s in enumerate(recent) if s.failed and s.direction == d.id)
        if fail:
            reasons.append(f"just failed: {-cfg.w_fail * fail:+.2f}")
        comps = {
            "prior": cfg.w_prior * prior,
            "state": cfg.w_state * fit,
            "transition": cfg.w_edge * edge_val,
            "similar": cfg.w_similar * similar_val,
            "explore": cfg.w_explore * explore,
            "fail_penalty": -cfg.w_fail * fail,
        }
        score = sum(comps.values()) + cfg.tie_jitter * rng.random()
        out.append(ScoredDirection(d.id, d.name, score, comps, "; ".join(reasons), evidence + into.n))
    out.sort(key=lambda s: (-s.score, s.id))
    return out
