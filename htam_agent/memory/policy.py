"""Direction selection on the HTG: score every direction for the current state and history, with reasons.

score(d) = w_prior * prior(d | operator class)                       seed knowledge
         + w_state * fit(d | bottleneck, status)                     seed knowledge
         + w_edge  * sum_i alpha_i * value(h_i -> d | similar states) transitions, attended over the history
         + w_similar * value(* -> d | similar states)                 what worked here regardless of the path
         + w_explore * sqrt(log(1 + N) / (1 + n_d))                   rarely tried directions
         - w_fail * sum_i decay^i [h_i = d and h_i failed]            directions that just failed
         - w_step_aside [d's last two attempts in this task failed,   no third try of a failing direction, no
                         or the coder applied another direction     third suggestion of one the coder declined
                         the last two times d was asked]
         - w_exhausted [every strategy of d that fits is already in the best, or failed here]
         + untried [d not measured in this task yet and fits the state: w_untried, raised to pass every direction
                    measured here without a gain over the previous best]

Gains are over the best before the step. A task's first kernel is a baseline: its speedup over eager is kept
apart (n_base), read only from the START edge (what to begin a task with), never as an improvement of its
direction. The K candidates of a step are split by split_portfolio: exploit what just improved, explore what
the task has not tried.

History position i = 0 is the latest step; alpha_i = decay^i, normalized. value() is class first: the outcomes
of states of the same operator class (weighted by bottleneck/status/backend similarity) are shrunk toward a
related-class estimate, which is itself shrunk toward zero (the priors) and down-weighted:

    value = (R_same + k * v_related) / (n_same + k),   v_related = w_related * R_rel / (n_rel + k)
                                                                  + w_feature * R_feat / (n_feat + k)

where, for a generic class (fused, model, other), "feat" pools the classes its reference contains (a GEMM + GELU
chain learns from elementwise and matmul tasks more than from unrelated ones)
with rewards on a saturated log scale (schema.reward_of: x32 counts 0.69, x2 0.53). So no evidence means zero
(an empty memory ranks by the priors), one outlier moves its own class by a bounded amount, and another class's
outcomes move this one only a little. Pure function of its inputs; the seed only breaks exact ties.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .schema import START, Direction, EdgeStats, HistoryStep, ScoredDirection, StateKey, TaskMemory
from .stats import FIELDS, TransitionIndex, class_split, key_mask, state_similarity, stats_of

__all__ = ["PolicyConfig", "score_directions", "state_similarity", "describe_stats", "bottleneck_fit", "value_of",
           "tiered_value", "record_text", "split_portfolio"]

_N, _IMPROVED, _FAILED, _NGAIN, _GAIN, _REWARD, _NBASE, _BASE = (FIELDS.index(f) for f in (
    "n", "improved", "failed", "n_gain", "sum_gain", "sum_reward", "n_base", "sum_base"))


@dataclass(frozen=True)
class PolicyConfig:
    """Weights of the score; set one to 0 for an ablation (e.g. w_edge=w_similar=0: priors only, no memory)."""

    w_prior: float = 1.0
    w_state: float = 1.0
    w_edge: float = 2.0
    w_similar: float = 1.0
    w_explore: float = 0.15
    w_fail: float = 0.6
    w_step_aside: float = 1.5
    w_exhausted: float = 0.6
    history_decay: float = 0.5
    history_len: int = 4
    shrinkage: float = 3.0
    #: how much another operator class's experience may count (after its own shrinkage); 0: classes never mix
    w_related: float = 0.3
    #: for a generic class (fused, model, other): how much the experience of the classes its reference contains
    #: may count (after its own shrinkage)
    w_feature: float = 0.6
    min_similarity: float = 0.05
    tie_jitter: float = 1e-6
    #: the task's exploration bonus for an untried direction that fits the state (see _explore_untried)
    w_untried: float = 0.3

    def without_transitions(self) -> PolicyConfig:
        """These weights with the two terms read from recorded transitions (w_edge, w_similar) off: the
        no-transitions ablation, which ranks by priors, state fit, exploration and the task's rules."""
        return replace(self, w_edge=0.0, w_similar=0.0)


def value_of(n: float, sum_reward: float, shrinkage: float) -> float:
    """Mean reward times confidence n / (n + shrinkage) = sum_reward / (n + shrinkage); 0 without evidence."""
    return float(sum_reward / (n + shrinkage)) if n > 0 else 0.0


def tiered_value(same: np.ndarray, related: np.ndarray, cfg: PolicyConfig,
                 feature: np.ndarray | None = None) -> float:
    """Class-first estimate (module docstring) from field vectors: the same-class pool, shrunk toward the
    (down-weighted, separately shrunk) feature-class and related-class pools."""
    v_rel = cfg.w_related * value_of(float(related[_N]), float(related[_REWARD]), cfg.shrinkage)
    if feature is not None:
        v_rel += cfg.w_feature * value_of(float(feature[_N]), float(feature[_REWARD]), cfg.shrinkage)
    n = float(same[_N])
    return float((same[_REWARD] + cfg.shrinkage * v_rel) / (n + cfg.shrinkage))


def describe_stats(st: EdgeStats) -> str:
    if not st.n:
        return "no record"
    parts = [f"{st.n:.1f} tries" if st.n % 1 else f"{int(st.n)} tries",
             f"{st.success_rate:.0%} improved the previous best", f"{st.failed / st.n:.0%} failed"]
    if st.mean_gain is not None:
        parts.append(f"mean gain x{math.exp(st.mean_gain):.2f} over the previous best")
    if st.n_base:
        parts.append(f"{st.n_base:.1f} first kernels" if st.n_base % 1 else f"{int(st.n_base)} first kernels")
    return ", ".join(parts)


def _counts_text(n: float, improved: float, failed: float, n_gain: float, sum_gain: float, n_base: float,
                 sum_base: float) -> str:
    """Counts in words, each gain with what it is over: a task's first kernels (baselines) over eager, later
    kernels over the best before their step, never mixed."""
    n_i, n_b, n_imp, n_f = (int(round(x)) for x in (n, n_base, improved, failed))
    parts = []
    if n_b:
        parts.append(f"{n_b} gave a task's first kernel (typical x{math.exp(sum_base / n_base):.2f} over eager)")
    parts.append(f"{n_imp} improved the previous best")
    flat = n_i - n_b - n_imp - n_f
    if flat > 0:
        parts.append(f"{flat} accepted without a gain over it")
    parts.append(f"{n_f} rejected")
    text = f"{_plural(n_i, 'try')}: " + ", ".join(parts)
    if n_gain > 0:  # mean over the accepted kernels that had a best before them
        text += f"; accepted after a first kernel: typical x{math.exp(sum_gain / n_gain):.2f} over the previous best"
    return text


def record_text(st: EdgeStats) -> str:
    """A record in words for prompts: rounded (similarity-weighted) counts, gains over the previous best and
    first kernels over eager apart; '' if none."""
    if int(round(st.n)) <= 0:
        return ""
    return _counts_text(st.n, st.improved, st.failed, st.n_gain, st.sum_gain, st.n_base, st.sum_base)


def bottleneck_fit(direction: Direction, bottleneck: str) -> float:
    if not direction.bottlenecks:
        return 0.5  # direction indifferent to the bottleneck (e.g. correctness)
    if bottleneck in direction.bottlenecks:
        return 1.0
    return 0.5 if bottleneck == "unknown" else 0.0


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word[:-1]}ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else f"{n} {word}s"


def _class_record(v: np.ndarray, op_class: str, backend: str) -> str:
    """Plain counts of one direction's outcomes in this operator class and backend (all tasks, all paths)."""
    if int(round(float(v[_N]))) <= 0:
        return f"no record yet in {op_class} tasks on {backend}"
    return f"in {op_class} tasks on {backend}: " + _counts_text(
        float(v[_N]), float(v[_IMPROVED]), float(v[_FAILED]), float(v[_NGAIN]), float(v[_GAIN]),
        float(v[_NBASE]), float(v[_BASE]))


def _task_record(direction: str, task: TaskMemory | None) -> str:
    """The direction's attempts in this task in words, each gain with what it is over: the task's first kernel
    is a baseline (over eager: there was no best to improve on), later kernels are over the best before their
    step."""
    attempts = task.attempts if task else ()
    mine = [a for a in attempts if a.direction == direction]
    if not mine:
        return ""
    parts = []
    for a in mine[-3:]:
        eager = f", x{a.speedup:.2f} over eager" if a.speedup else ""
        if a.baseline and a.became_best:
            what = f"gave the task's first kernel{eager} (a baseline, not a gain)"
        elif a.baseline:
            what = f"accepted{eager}, slower than that step's first kernel"
        elif a.improved:
            what = "improved the previous best" + (f" (x{a.vs_best:.2f} over it)" if a.vs_best else "")
        elif a.accepted:
            what = "accepted, no gain over the previous best" + (f" (x{a.vs_best:.2f} of it)" if a.vs_best else "")
        else:
            what = "rejected"
        parts.append(f"step {a.step} {what}")
    return "in this task: " + ", ".join(parts)


def score_directions(
    directions: Sequence[Direction],
    key: StateKey,
    history: Sequence[HistoryStep],
    index: TransitionIndex | None,
    config: PolicyConfig | None = None,
    seed: int = 0,
    task: TaskMemory | None = None,
    strategy_counts: Mapping[str, tuple[int, int]] | None = None,
    features: frozenset[str] = frozenset(),
) -> list[ScoredDirection]:
    """Rank all directions, best first, each with its score components, a reason and a short evidence summary.

    ``task`` is what this task has done so far (no-repeat rules); ``strategy_counts`` maps a direction to
    (strategies that fit this state, those of them not excluded by ``task``); ``features`` are the operator classes
    the reference contains (for a fused chain or a model, their experience stands in for the class's own)."""
    cfg = config or PolicyConfig()
    recent = list(reversed(history))[: max(1, cfg.history_len)]  # recent[0] = latest step
    sources = [(s.direction, cfg.history_decay ** i) for i, s in enumerate(recent)] or [(START, 1.0)]
    total_alpha = sum(a for _, a in sources)
    rng = random.Random(seed)
    kt = key.as_tuple()

    # [source, target, field]: every edge pooled over same-class and related-class states, two products
    have = index is not None and bool(index.nodes)
    if have:
        same_w, feat_w, rel_w = class_split(kt, cfg.min_similarity, features)
        p_same, p_feat, p_rel = (index.pooled(w) for w in (same_w, feat_w, rel_w))  # type: ignore[union-attr]
        # "any path" counts what a direction did after a task's first step: a first kernel is a baseline over
        # eager (the START edge, read by the edge term at step 0), not an improvement of its direction
        s0 = index.position(START)  # type: ignore[union-attr]
        later = [i for i in range(p_same.shape[0]) if i != s0]
        into_same, into_feat, into_rel = (p[later].sum(axis=0) for p in (p_same, p_feat, p_rel))
        exact = key_mask(op_class=key.op_class, backend=key.backend)
        into_class = index.pooled(exact.astype(float)).sum(axis=0)  # type: ignore[union-attr]
    pos = index.position if index is not None else (lambda _name: None)

    def target_n(j: int | None) -> float:
        if not have or j is None:
            return 0.0
        return float(into_same[j, _N] + cfg.w_feature * into_feat[j, _N] + cfg.w_related * into_rel[j, _N])

    n_total = sum(target_n(pos(d.id)) for d in directions)
    out: list[ScoredDirection] = []
    for d in directions:
        prior = d.prior(key.op_class)
        fit = 0.5 * d.affinity(key.status) + 0.5 * bottleneck_fit(d, key.bottleneck)
        reasons = [f"prior {prior:.2f} for {key.op_class}",
                   f"fit {fit:.2f} ({key.bottleneck}-bound, {key.status.replace('_', ' ')})"]
        summary = [f"seed prior {'high' if prior >= 0.75 else 'medium' if prior >= 0.45 else 'low'} for "
                   f"{key.op_class}" + (f", aimed at {'/'.join(d.bottlenecks)}-bound kernels" if d.bottlenecks
                                        else "")]
        edge_val, evidence, similar_val = 0.0, 0.0, 0.0
        j = pos(d.id)
        if have and j is not None:
            for p_i, (src, alpha) in enumerate(sources):
                i = pos(src)
                if i is None or p_same[i, j, _N] + p_feat[i, j, _N] + p_rel[i, j, _N] <= 0:
                    continue
                v = tiered_value(p_same[i, j], p_rel[i, j], cfg, p_feat[i, j])
                edge_val += alpha / total_alpha * v
                evidence += float(p_same[i, j, _N])
                when = "at the start" if src == START else f"after {src}" + (
                    " (latest)" if p_i == 0 else f" ({p_i + 1} steps back)")
                reasons.append(f"{when}: same class {describe_stats(stats_of(p_same[i, j]))}; its parts' classes "
                               f"{float(p_feat[i, j, _N]):.2f}, related classes {float(p_rel[i, j, _N]):.2f} "
                               f"weighted tries -> {v:+.2f}")
            if into_same[j, _N] + into_feat[j, _N] + into_rel[j, _N] > 0:
                similar_val = tiered_value(into_same[j], into_rel[j], cfg, into_feat[j])
                reasons.append(f"any path: same class {describe_stats(stats_of(into_same[j]))} -> {similar_val:+.2f}")
            summary.append(_class_record(into_class[j], key.op_class, key.backend))
        else:
            summary.append(f"no record yet in {key.op_class} tasks on {key.backend}")
        in_task = _task_record(d.id, task)
        if in_task:
            summary.append(in_task)
        n_d = target_n(j)
        explore = math.sqrt(math.log1p(n_total) / (1.0 + n_d)) if n_total else 0.0
        if explore:
            reasons.append(f"exploration {cfg.w_explore * explore:+.2f} (tried {n_d:.1f} of {n_total:.1f})")
        fail = sum(cfg.history_decay ** i for i, s in enumerate(recent) if s.failed and s.direction == d.id)
        if fail:
            reasons.append(f"just failed: {-cfg.w_fail * fail:+.2f}")
        aside = 1.0 if task is not None and task.failed_twice(d.id) else 0.0
        if aside:
            reasons.append(f"failed twice in a row in this task, steps aside: {-cfg.w_step_aside:+.2f}")
            summary.append("its last two attempts in this task did not improve")
        elif task is not None and task.declined_twice(d.id):
            aside = 1.0
            reasons.append(f"declined twice in this task (the coder applied another direction), steps aside: "
                           f"{-cfg.w_step_aside:+.2f}")
            summary.append("the last two candidates asked to take it in this task applied another direction")
        counts = (strategy_counts or {}).get(d.id)
        exhausted = 1.0 if counts is not None and counts[0] > 0 and counts[1] == 0 else 0.0
        if exhausted:
            reasons.append(f"all {counts[0]} fitting strategies are already in the current best or failed here: "  # type: ignore[index]
                           f"{-cfg.w_exhausted:+.2f}")
            summary.append("every strategy of it that fits is already in the current best or failed here")
        fits = (bottleneck_fit(d, key.bottleneck) > 0 and d.affinity(key.status) >= MIN_STATUS_AFFINITY
                and (strategy_counts is None or (counts is not None and counts[1] > 0)))
        role = ""
        if task is not None and task.attempts:
            if task.gained(d.id):
                role = "exploit"
            elif task.measured(d.id):
                role = "measured"
            elif fits and not aside:
                role = "explore"
        comps = {  # plain floats: the agent serializes them into its state and traces
            "prior": cfg.w_prior * prior,
            "state": cfg.w_state * fit,
            "transition": cfg.w_edge * edge_val,
            "similar": cfg.w_similar * similar_val,
            "explore": cfg.w_explore * explore,
            "fail_penalty": -cfg.w_fail * fail,
            "step_aside": -cfg.w_step_aside * aside,
            "exhausted": -cfg.w_exhausted * exhausted,
        }
        score = float(sum(comps.values()) + cfg.tie_jitter * rng.random())
        out.append(ScoredDirection(d.id, d.name, score, comps, "; ".join(reasons), evidence + n_d,
                                   "; ".join(summary), role))
    _explore_untried(out, cfg)
    out.sort(key=lambda s: (-s.score, s.id))
    return out


#: a direction "fits the state" for exploration when its status affinity is at least this (and it is aimed at
#: the bottleneck, or indifferent to it, and has a strategy left that fits)
MIN_STATUS_AFFINITY = 0.4


def _explore_untried(ranked: list[ScoredDirection], cfg: PolicyConfig) -> None:
    """The task's exploration bonus: a direction not yet measured in this task that fits the state ends above
    every direction measured here without a gain over the previous best, by at least ``w_untried``. The bonus is
    w_untried plus whatever it takes to pass the best such direction, so the memory's evidence still orders the
    untried ones among themselves."""
    stale = [d.score for d in ranked if d.role == "measured"]
    top_stale = max(stale) if stale else None
    for d in ranked:
        if d.role != "explore":
            continue
        bonus = cfg.w_untried + (max(0.0, top_stale - d.score) if top_stale is not None else 0.0)
        d.components["untried"] = bonus
        d.score += bonus
        d.reason += f"; untried in this task and fits the state: exploration {bonus:+.2f}"
        d.summary += "; not tried in this task yet, and it fits the state"


def split_portfolio(ranked: Sequence[ScoredDirection], k: int) -> tuple[list[str], str]:
    """The step's K directions and how they were split. Exploit: directions whose latest attempt in this task
    improved the previous best take ceil(K/2) slots (all K when nothing untried fits). Explore: untried
    directions that fit the state take the rest, best ranked first. Slots left over go by rank (cycling when
    there are fewer directions than K). Before anything is measured (step 0) all K go by rank."""
    if k <= 0 or not ranked:
        return [], ""
    exploit = [d.id for d in ranked if d.role == "exploit"]
    explore = [d.id for d in ranked if d.role == "explore"]
    n_exploit = min(len(exploit), k if not explore else (k + 1) // 2)
    slots = exploit[:n_exploit] + explore[:k - n_exploit]
    n_explore = len(slots) - n_exploit
    rest = [d.id for d in ranked if d.id not in slots]
    while len(slots) < k:
        pool = rest or [d.id for d in ranked]
        slots.append(pool[(len(slots) - n_exploit - n_explore) % len(pool)])
    by_rank = k - n_exploit - n_explore
    if not exploit and not explore and not any(d.role for d in ranked):
        return slots, f"{k} by rank (nothing measured in this task yet)"
    return slots, (f"{n_exploit} exploit (last attempt here improved the previous best), {n_explore} explore "
                   f"(untried here, fits the state)" + (f", {by_rank} by rank" if by_rank else ""))
