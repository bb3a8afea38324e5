"""Statistics derived from the event log, dense over state keys so that pooling over similar states is one
matrix-vector product.

The state-key space is small and fixed (11 operator classes x 5 bottlenecks x 5 statuses x 3 backends = 825 keys),
so each edge (source direction -> direction) holds a (fields x keys) array. Pooling the experience of states
similar to the current one is then ``edge @ similarity_vector(key)`` for all edges at once: constant time in the
number of recorded events (about 1 ms for the whole graph), which keeps selection fast at 100k transitions.
Strategy statistics are sparse (thousands of strategies, few keys each) and stay in dictionaries.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Sequence

import numpy as np

from .schema import (
    BACKENDS,
    BOTTLENECKS,
    FAIL_REWARD,
    FAILING_STATUSES,
    GENERIC_CLASSES,
    IMPROVE_EPS,
    MEMORY_STATUSES,
    OP_CLASSES,
    REWARD_CLIP,
    UNKNOWN_GAIN_REWARD,
    WORKING_STATUSES,
    EdgeStats,
    improved_of,
    is_baseline,
    reward_of,
)

KeyT = tuple[str, str, str, str]
KEYS: tuple[KeyT, ...] = tuple(itertools.product(OP_CLASSES, BOTTLENECKS, MEMORY_STATUSES, BACKENDS))
KEY_INDEX: dict[KeyT, int] = {k: i for i, k in enumerate(KEYS)}
#: n_gain/sum_gain are log gains over the best before the step; n_base/sum_base the log speedups over eager of
#: baselines (a task's first accepted kernel), which are not improvements of anything and are kept apart
FIELDS = ("n", "improved", "failed", "n_gain", "sum_gain", "sum_gain2", "sum_reward", "n_base", "sum_base")
NF = len(FIELDS)

# ---------------------------------------------------------------------------------------------- similarity

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


def _bn_sim(a: str, b: str) -> float:
    return 1.0 if a == b else 0.6 if "unknown" in (a, b) else 0.4


def _status_sim(a: str, b: str) -> float:
    if a == b:
        return 1.0
    if {a, b} <= FAILING_STATUSES or {a, b} <= WORKING_STATUSES:
        return 0.5
    return 0.25


def _backend_sim(a: str, b: str) -> float:
    return 1.0 if a == b else 0.6


def state_similarity(a: KeyT, b: KeyT) -> float:
    """1 for the same key; operator class dominates (0 across unrelated classes), then status, bottleneck, backend."""
    return op_affinity(a[0], b[0]) * _bn_sim(a[1], b[1]) * _status_sim(a[2], b[2]) * _backend_sim(a[3], b[3])


def _table(values: Sequence[str], f) -> np.ndarray:  # noqa: ANN001 - a pairwise similarity function
    return np.array([[f(a, b) for b in values] for a in values])


_TABLES = (_table(OP_CLASSES, op_affinity), _table(BOTTLENECKS, _bn_sim), _table(MEMORY_STATUSES, _status_sim),
           _table(BACKENDS, _backend_sim))
_KEY_PARTS = np.array([[vals.index(k[j]) for j, vals in enumerate((OP_CLASSES, BOTTLENECKS, MEMORY_STATUSES, BACKENDS))]
                       for k in KEYS])
_SIM_CACHE: dict[tuple[KeyT, float], np.ndarray] = {}


def similarity_vector(key: KeyT, min_similarity: float = 0.0) -> np.ndarray:
    """Similarity of every state key to ``key`` (below ``min_similarity`` set to 0); cached, read-only."""
    got = _SIM_CACHE.get((key, min_similarity))
    if got is None:
        parts = [vals.index(key[j]) for j, vals in enumerate((OP_CLASSES, BOTTLENECKS, MEMORY_STATUSES, BACKENDS))]
        got = np.ones(len(KEYS))
        for j, table in enumerate(_TABLES):
            got = got * table[parts[j]][_KEY_PARTS[:, j]]
        got[got < min_similarity] = 0.0
        got.setflags(write=False)
        _SIM_CACHE[(key, min_similarity)] = got
    return got


_OP_PART = _KEY_PARTS[:, 0]
_SPLIT_CACHE: dict[tuple[KeyT, float, frozenset[str]], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
#: How alike a generic-class task is to a task of one of the classes it contains (a GEMM + GELU epilogue and an
#: elementwise GELU share the epilogue's memory traffic, not the GEMM).
FEATURE_AFFINITY = 0.7


def class_split(key: KeyT, min_similarity: float = 0.0,
                features: frozenset[str] = frozenset()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(same, feature, related): the similarity vector split into keys of the same operator class; for a generic
    class (fused, model, other), keys of the classes its reference contains (``features``), at FEATURE_AFFINITY;
    and keys of other classes, weighted by the squared class affinity. Experience is pooled class first: the
    other two only shape the estimate through small, separately shrunk terms (policy.py), so a burst of results
    in one class cannot decide the choice in another."""
    feats = frozenset(features) - GENERIC_CLASSES if key[0] in GENERIC_CLASSES else frozenset()
    got = _SPLIT_CACHE.get((key, min_similarity, feats))
    if got is None:
        sim = similarity_vector(key, min_similarity)
        same_mask = _OP_PART == OP_CLASSES.index(key[0])
        same = np.where(same_mask, sim, 0.0)
        aff = _TABLES[0][OP_CLASSES.index(key[0])][_OP_PART]  # affinity of each key's class to this one
        feat_mask = np.isin(_OP_PART, [OP_CLASSES.index(f) for f in feats]) & ~same_mask
        if feats:  # bottleneck, status and backend similarity as usual; the class factor is FEATURE_AFFINITY
            rest = (_TABLES[1][BOTTLENECKS.index(key[1])][_KEY_PARTS[:, 1]]
                    * _TABLES[2][MEMORY_STATUSES.index(key[2])][_KEY_PARTS[:, 2]]
                    * _TABLES[3][BACKENDS.index(key[3])][_KEY_PARTS[:, 3]])
            feature = np.where(feat_mask, rest * FEATURE_AFFINITY ** 2, 0.0)
            feature[feature < min_similarity] = 0.0
        else:
            feature = np.zeros(len(KEYS))
        related = np.where(same_mask | feat_mask, 0.0, sim * aff)  # sim already holds one factor of the affinity
        for v in (same, feature, related):
            v.setflags(write=False)
        got = _SPLIT_CACHE[(key, min_similarity, feats)] = (same, feature, related)
    return got


# ---------------------------------------------------------------------------------------------- cells


def stats_of(v: np.ndarray) -> EdgeStats:
    """EdgeStats from a field vector (counts are effective counts when the vector is similarity-weighted)."""
    n, imp, fail, ng, sg, sg2, sr, nb, sb = (float(x) for x in v)
    as_num = (lambda x: int(x) if float(x).is_integer() else x)  # noqa: E731 - keep integer counts integer
    return EdgeStats(as_num(n), as_num(imp), as_num(fail), as_num(ng), sg, sg2, sr, as_num(nb), sb)


def _row_fields(accepted: np.ndarray, gain: np.ndarray, baseline: np.ndarray | None = None) -> np.ndarray:
    """Vectorized twin of schema.reward_of / improved_of: one field vector per event, shape (n, NF).

    A baseline's log speedup over eager goes to n_base/sum_base, not to the gains; its reward is that speedup
    (the value of starting a task with this direction)."""
    base = np.zeros_like(accepted, dtype=bool) if baseline is None else baseline & accepted
    has_gain = ~np.isnan(gain)
    g = np.where(has_gain, gain, 0.0)
    improved = accepted & ~base & (~has_gain | (g > IMPROVE_EPS))
    reward = np.where(~accepted, FAIL_REWARD, np.where(has_gain, REWARD_CLIP * np.tanh(g / REWARD_CLIP),
                                                       UNKNOWN_GAIN_REWARD))
    n_gain = has_gain & ~base
    n_base = has_gain & base
    return np.stack([np.ones_like(g), improved, ~accepted, n_gain, np.where(n_gain, g, 0.0),
                     np.where(n_gain, g * g, 0.0), reward, n_base, np.where(n_base, g, 0.0)], axis=1).astype(float)


class Agg:
    """Running sums for one sparse (strategy, state key) cell."""

    __slots__ = ("n", "improved", "failed", "n_gain", "sum_gain", "sum_gain2", "sum_reward", "n_base", "sum_base")

    def __init__(self) -> None:
        self.n = self.improved = self.failed = self.n_gain = self.n_base = 0
        self.sum_gain = self.sum_gain2 = self.sum_reward = self.sum_base = 0.0

    def add(self, accepted: bool, gain: float | None, baseline: bool = False) -> None:
        self.n += 1
        self.improved += improved_of(accepted, gain, baseline)
        self.failed += not accepted
        if gain is not None and baseline and accepted:
            self.n_base += 1
            self.sum_base += gain
        elif gain is not None:
            self.n_gain += 1
            self.sum_gain += gain
            self.sum_gain2 += gain * gain
        self.sum_reward += reward_of(accepted, gain)

    def merge(self, other: Agg, weight: float = 1) -> None:
        """Weighted accumulation (weights are state similarities; counts become effective counts)."""
        self.n += other.n * weight  # type: ignore[assignment]
        self.improved += other.improved * weight  # type: ignore[assignment]
        self.failed += other.failed * weight  # type: ignore[assignment]
        self.n_gain += other.n_gain * weight  # type: ignore[assignment]
        self.sum_gain += other.sum_gain * weight
        self.sum_gain2 += other.sum_gain2 * weight
        self.sum_reward += other.sum_reward * weight
        self.n_base += other.n_base * weight  # type: ignore[assignment]
        self.sum_base += other.sum_base * weight

    def freeze(self) -> EdgeStats:
        return EdgeStats(self.n, self.improved, self.failed, self.n_gain, self.sum_gain, self.sum_gain2,
                         self.sum_reward, self.n_base, self.sum_base)

    def vector(self) -> np.ndarray:
        """The sums as a field vector (FIELDS order), for the policy's estimates."""
        return np.array([getattr(self, f) for f in FIELDS], dtype=float)


# ---------------------------------------------------------------------------------------------- the index


class TransitionIndex:
    """Edge statistics as a dense array [source, target, field, key]; strategy statistics as dicts."""

    def __init__(self) -> None:
        self.nodes: list[str] = []
        self._pos: dict[str, int] = {}
        self._edge = np.zeros((0, 0, NF, len(KEYS)))
        self.strategies: dict[str, dict[int, Agg]] = {}
        self.failures: dict[tuple[str, str], deque[str]] = {}  # recent failure texts per edge
        self.n_events = 0

    # -- building ----------------------------------------------------------------------------------------

    def node(self, name: str) -> int:
        i = self._pos.get(name)
        if i is None:
            i = self._pos[name] = len(self.nodes)
            self.nodes.append(name)
            if i >= self._edge.shape[0]:
                cap = max(12, 2 * self._edge.shape[0])
                grown = np.zeros((cap, cap, NF, len(KEYS)))
                s = self._edge.shape[0]
                grown[:s, :s] = self._edge
                self._edge = grown
        return i

    def fold(self, rows: Sequence[tuple]) -> None:
        """Add events given as (op, bottleneck, status, backend, prev, direction, accepted, gain, why,
        speedup_before, ...); without speedup_before (a shorter row) no event counts as a baseline."""
        if not rows:
            return
        src = np.array([self.node(r[4]) for r in rows])
        dst = np.array([self.node(r[5]) for r in rows])
        key = np.array([KEY_INDEX[(r[0], r[1], r[2], r[3])] for r in rows])
        vals = _row_fields(np.array([bool(r[6]) for r in rows]),
                           np.array([np.nan if r[7] is None else r[7] for r in rows], dtype=float),
                           np.array([len(r) > 10 and is_baseline(bool(r[6]), r[9]) for r in rows], dtype=bool))
        np.add.at(self._edge, (src[:, None], dst[:, None], np.arange(NF)[None, :], key[:, None]), vals)
        for r in rows:
            if r[8] and not r[6]:
                self.failures.setdefault((r[4], r[5]), deque(maxlen=3)).append(r[8])
        self.n_events += len(rows)

    def add_strategy(self, sid: str, key: KeyT, accepted: bool, gain: float | None, baseline: bool = False) -> None:
        self.strategies.setdefault(sid, {}).setdefault(KEY_INDEX[key], Agg()).add(accepted, gain, baseline)

    # -- reading -----------------------------------------------------------------------------------------

    @property
    def edge(self) -> np.ndarray:
        """[source, target, field, key] for the nodes seen so far (a view)."""
        s = len(self.nodes)
        return self._edge[:s, :s]

    def pairs(self) -> list[tuple[str, str]]:
        n = self.edge[:, :, 0, :].sum(axis=2)
        return [(self.nodes[i], self.nodes[j]) for i, j in zip(*np.nonzero(n), strict=True)]

    def cell(self, source: str, target: str, key: KeyT) -> EdgeStats:
        i, j = self._pos.get(source), self._pos.get(target)
        if i is None or j is None:
            return EdgeStats()
        return stats_of(self._edge[i, j, :, KEY_INDEX[key]])

    def edge_total(self, source: str, target: str, key_mask: np.ndarray | None = None) -> EdgeStats:
        """An edge's statistics summed over the keys in ``key_mask`` (all keys when None)."""
        i, j = self._pos.get(source), self._pos.get(target)
        if i is None or j is None:
            return EdgeStats()
        cells = self._edge[i, j]
        return stats_of(cells.sum(axis=1) if key_mask is None else cells[:, key_mask].sum(axis=1))

    def pooled(self, sim: np.ndarray) -> np.ndarray:
        """Similarity-weighted statistics of every edge: [source, target, field]."""
        return self.edge @ sim

    def strategy_total(self, sid: str, key_mask: np.ndarray | None = None) -> EdgeStats:
        total = Agg()
        for k, a in self.strategies.get(sid, {}).items():
            if key_mask is None or key_mask[k]:
                total.merge(a)
        return total.freeze()

    def strategy_pooled(self, sid: str, sim: np.ndarray) -> Agg:
        total = Agg()
        for k, a in self.strategies.get(sid, {}).items():
            w = sim[k]
            if w:
                total.merge(a, float(w))
        return total

    def position(self, name: str) -> int | None:
        return self._pos.get(name)


def key_mask(op_class: str | None = None, bottleneck: str | None = None, status: str | None = None,
             backend: str | None = None) -> np.ndarray | None:
    """Boolean mask over KEYS for exact filters (None when nothing is filtered)."""
    if op_class is None and bottleneck is None and status is None and backend is None:
        return None
    want = (op_class, bottleneck, status, backend)
    return np.array([all(w is None or w == k[j] for j, w in enumerate(want)) for k in KEYS])
