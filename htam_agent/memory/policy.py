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

from .schema import START, Direction, EdgeStats, HistoryStep, ScoredDirection, StateKey
from .stats import FIELDS, TransitionIndex, similarity_vector, state_similarity, stats_of

__all__ = ["PolicyConfig", "score_directions", "state_similarity", "describe_stats", "bottleneck_fit", "value_of"]

_N, _REWARD = FIELDS.index("n"), FIELDS.index("sum_reward")


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


def value_of(n: float, sum_reward: float, shrinkage: float) -> float:
    """Mean reward times confidence n / (n + shrinkage) = sum_reward / (n + shrinkage); 0 without evidence."""
    return float(sum_reward / (n + shrinkage)) if n > 0 else 0.0


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
    recent = list(reversed(history))[: max(1, cfg.history_len)]  # recent[0] = latest step
    sources = [(s.direction, cfg.history_decay ** i) for i, s in enumerate(recent)] or [(START, 1.0)]
    total_alpha = sum(a for _, a in sources)
    rng = random.Random(seed)

    # [source, target, field]: every edge pooled over states similar to this one, in one product
    pooled = index.pooled(similarity_vector(key.as_tuple(), cfg.min_similarity)) if index and index.nodes else None
    into = pooled.sum(axis=0) if pooled is not None else None  # [target, field]: any source
    pos = index.position if index is not None else (lambda _name: None)

    def target_n(d: str) -> float:
        j = pos(d)
        return float(into[j, _N]) if into is not None and j is not None else 0.0

    n_total = sum(target_n(d.id) for d in directions)
    out: list[ScoredDirection] = []
    for d in directions:
        prior = d.prior(key.op_class)
        fit = 0.5 * d.affinity(key.status) + 0.5 * bottleneck_fit(d, key.bottleneck)
        reasons = [f"prior {prior:.2f} for {key.op_class}",
                   f"fit {fit:.2f} ({key.bottleneck}-bound, {key.status.replace('_', ' ')})"]
        edge_val, evidence, similar_val = 0.0, 0.0, 0.0
        j = pos(d.id)
        if pooled is not None and j is not None:
            for p_i, (src, alpha) in enumerate(sources):
                i = pos(src)
                if i is None or pooled[i, j, _N] <= 0:
                    continue
                v = value_of(pooled[i, j, _N], pooled[i, j, _REWARD], cfg.shrinkage)
                edge_val += alpha / total_alpha * v
                evidence += float(pooled[i, j, _N])
                when = "at the start" if src == START else f"after {src}" + (
                    " (latest)" if p_i == 0 else f" ({p_i + 1} steps back)")
                reasons.append(f"{when} in similar states: {describe_stats(stats_of(pooled[i, j]))} -> {v:+.2f}")
            if into[j, _N] > 0:
                similar_val = value_of(into[j, _N], into[j, _REWARD], cfg.shrinkage)
                reasons.append(f"any path, similar states: {describe_stats(stats_of(into[j]))} -> {similar_val:+.2f}")
        n_d = target_n(d.id)
        explore = math.sqrt(math.log1p(n_total) / (1.0 + n_d)) if n_total else 0.0
        if explore:
            reasons.append(f"exploration {cfg.w_explore * explore:+.2f} (tried {n_d:.1f} of {n_total:.1f})")
        fail = sum(cfg.history_decay ** i for i, s in enumerate(recent) if s.failed and s.direction == d.id)
        if fail:
            reasons.append(f"just failed: {-cfg.w_fail * fail:+.2f}")
        comps = {  # plain floats: the agent serializes them into its state and traces
            "prior": cfg.w_prior * prior,
            "state": cfg.w_state * fit,
            "transition": cfg.w_edge * edge_val,
            "similar": cfg.w_similar * similar_val,
            "explore": cfg.w_explore * explore,
            "fail_penalty": -cfg.w_fail * fail,
        }
        score = float(sum(comps.values()) + cfg.tie_jitter * rng.random())
        out.append(ScoredDirection(d.id, d.name, score, comps, "; ".join(reasons), evidence + n_d))
    out.sort(key=lambda s: (-s.score, s.id))
    return out
