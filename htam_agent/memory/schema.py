"""Vocabulary and records of the HTAM memory.

One module so that every other memory module, the seed files and the export format agree on the same names:
operator classes, bottlenecks, statuses, backends, the state key transitions are grouped by, and the outcome
the evaluator reports. Runtime records are frozen dataclasses (cheap, hashable); seed and export records are
pydantic models (validated when read from files written by people or other versions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from htam_agent.backend_registry import BACKENDS as _REGISTRY_BACKENDS

OpClass = Literal[
    "elementwise", "reduction", "normalization", "matmul", "convolution", "pooling", "attention", "scan",
    "fused", "model", "other",
]
Bottleneck = Literal["memory", "compute", "latency", "occupancy", "unknown"]
Status = Literal["none", "compile_error", "incorrect", "correct_slow", "near_roofline"]
Backend = Literal[_REGISTRY_BACKENDS]  # type: ignore[valid-type]  # the registry's names (htam_agent/backend_registry.py)

# Each vocabulary is written once, as its Literal; the tuples (whose order stats.py indexes) are read from it.
OP_CLASSES: tuple[str, ...] = get_args(OpClass)
BOTTLENECKS: tuple[str, ...] = get_args(Bottleneck)
#: The memory's status of a task's best so far (not a verdict's: evaluation.common.verdict.STATUSES).
MEMORY_STATUSES: tuple[str, ...] = get_args(Status)
#: The registry's names in its order (stats.py indexes this tuple; the registry only appends).
BACKENDS: tuple[str, ...] = _REGISTRY_BACKENDS
#: Classes that name a mix rather than a kind of work: they say nothing about which techniques apply.
GENERIC_CLASSES: frozenset[str] = frozenset({"fused", "model", "other"})
FAILING_STATUSES: frozenset[str] = frozenset({"compile_error", "incorrect"})
WORKING_STATUSES: frozenset[str] = frozenset({"correct_slow", "near_roofline"})

#: The history's start: the source of the edge taken by a task's first step.
START = "start"

#: A log-speedup above this counts as an improvement (1%): timing noise is not a gain.
IMPROVE_EPS = 0.01
#: Reward of a rejected candidate (compile error, wrong result, cheat): the cost of a wasted step.
FAIL_REWARD = -0.5
#: Reward of an accepted candidate whose gain is unknown (no speedup measured).
UNKNOWN_GAIN_REWARD = 0.1
#: Scale of the reward's saturation: reward = REWARD_CLIP * tanh(log gain / REWARD_CLIP). Near 1 it is the log
#: gain itself (x1.1 -> 0.095); a doubling gives 0.53; x32 gives 0.69, so one outlier counts barely more than a
#: solid 2x and cannot swamp an edge (a hard clip at 1.5 let a single x32 weigh as much as three doublings).
REWARD_CLIP = math.log(2.0)


def _check(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; expected one of {', '.join(allowed)}")
    return value


@dataclass(frozen=True)
class StateKey:
    """The discrete part of a state: what transitions are grouped and compared by."""

    op_class: str
    bottleneck: str = "unknown"
    status: str = "none"
    backend: str = "cuda"

    def __post_init__(self) -> None:
        _check(self.op_class, OP_CLASSES, "operator class")
        _check(self.bottleneck, BOTTLENECKS, "bottleneck")
        _check(self.status, MEMORY_STATUSES, "status")
        _check(self.backend, BACKENDS, "backend")

    def as_tuple(self) -> tuple[str, str, str, str]:
        return (self.op_class, self.bottleneck, self.status, self.backend)

    def describe(self) -> str:
        """A sentence for embedding and prompts; the free text of a state is appended to it."""
        return (f"{self.op_class} operator, {self.bottleneck}-bound, status {self.status.replace('_', ' ')}, "
                f"backend {self.backend}.")


@dataclass(frozen=True)
class MemoryState:
    """A state as the agent sees it: key, short free text, and the current best speedup over eager (if any).

    ``features`` are the operator classes the reference actually contains (a conv + ReLU chain is "fused" but
    holds convolution and elementwise work, no reduction): strategies are offered only when they fit one of
    them. Empty means unknown (no filter beyond the operator class)."""

    key: StateKey
    description: str = ""
    speedup: float | None = None
    features: frozenset[str] = frozenset()
    #: the task's shape facts (SHAPE_FACTS) as sorted (name, value) pairs; empty: unknown (no shape filter)
    shape_facts: tuple[tuple[str, int], ...] = ()
    #: the best kernel's measured roofline fraction (None before a timed best)
    roofline: float | None = None

    def __post_init__(self) -> None:
        if self.speedup is not None and not (self.speedup > 0 and math.isfinite(self.speedup)):
            raise ValueError(f"speedup must be a positive finite number, got {self.speedup!r}")
        for f in self.features:
            _check(f, OP_CLASSES, "feature (operator class)")
        for name, _v in self.shape_facts:
            if name not in SHAPE_FACTS:
                raise ValueError(f"unknown shape fact {name!r}; expected one of {', '.join(SHAPE_FACTS)}")

    @property
    def shapes(self) -> dict[str, int]:
        return dict(self.shape_facts)

    @staticmethod
    def facts_of(shapes: dict[str, int] | None) -> tuple[tuple[str, int], ...]:
        """Shape facts from a plain dict (unknown names and non-positive values dropped), for ``shape_facts``."""
        return tuple(sorted((k, int(v)) for k, v in (shapes or {}).items()
                            if k in SHAPE_FACTS and isinstance(v, int | float) and v > 0))

    def text(self) -> str:
        return f"{self.key.describe()} {self.description}".strip()


@dataclass(frozen=True)
class Outcome:
    """The evaluator's verdict on the candidate a step produced, summarized."""

    accepted: bool
    status: str
    speedup_vs_eager: float | None = None
    failed_reason: str = ""

    def __post_init__(self) -> None:
        _check(self.status, MEMORY_STATUSES, "status")
        s = self.speedup_vs_eager
        if s is not None and not (s > 0 and math.isfinite(s)):
            raise ValueError(f"speedup_vs_eager must be a positive finite number, got {s!r}")


@dataclass(frozen=True)
class HistoryStep:
    """One earlier step of the current task: its direction and whether its candidate was rejected."""

    direction: str
    failed: bool = False


@dataclass(frozen=True)
class Attempt:
    """One candidate of the current task: what it applied (declared or assigned), in which state, and whether it
    improved the best. The policy and retrieval read these so a step does not repeat what the current best
    already does or what just failed."""

    direction: str
    strategies: tuple[str, ...] = ()
    improved: bool = False
    accepted: bool = False
    key: StateKey | None = None
    step: int = 0
    became_best: bool = False  # the step's best candidate, which the later steps build on
    asked: str | None = None   # the direction this candidate was asked to take (it may have applied another)
    #: accepted when the task had no best yet: it sets the baseline, it improves nothing (``improved`` is False)
    baseline: bool = False
    speedup: float | None = None   # over eager, when accepted
    vs_best: float | None = None   # speedup over the best before its step (None for a baseline or a reject)


@dataclass(frozen=True)
class TaskMemory:
    """What the current task has done so far (oldest first): the basis of the no-repeat rules.

    ``best_strategies`` are what the current best kernel applies (the union along the chain of improvements,
    since each improvement is written on top of the previous best)."""

    attempts: tuple[Attempt, ...] = ()

    @property
    def best_strategies(self) -> frozenset[str]:
        return frozenset(s for a in self.attempts if a.became_best for s in a.strategies)

    def failed_strategies(self, key: StateKey) -> frozenset[str]:
        """Strategies of attempts that did not improve in this very state (another state may suit them); a
        baseline did not fail anything."""
        return frozenset(s for a in self.attempts if not a.improved and not a.baseline and a.key == key
                         for s in a.strategies)

    def measured(self, direction: str) -> bool:
        """Whether a candidate of this task applied the direction and got a verdict."""
        return any(a.direction == direction for a in self.attempts)

    def gained(self, direction: str) -> bool:
        """The direction's latest attempt in this task beat the best before its step (a baseline does not)."""
        mine = [a for a in self.attempts if a.direction == direction]
        return bool(mine) and mine[-1].improved

    def excluded_strategies(self, key: StateKey) -> dict[str, str]:
        """strategy id -> why it is not offered again."""
        out = {s: "the current best already applies it" for s in self.best_strategies}
        for s in self.failed_strategies(key):
            out.setdefault(s, "it did not improve in this state in this task")
        return out

    def declined_twice(self, direction: str) -> bool:
        """The last two candidates asked to take the direction applied another one: the coder judged it unfit for
        this task twice (a model that read the profile, or an offline coder with no move for it), so suggesting
        it a third time is noise. Nothing was measured under it, so nothing is recorded against it either."""
        asked = [a for a in self.attempts if a.asked == direction]
        return len(asked) >= 2 and all(a.direction != direction for a in asked[-2:])

    def failed_twice(self, direction: str) -> bool:
        """The direction's last two attempts in this task both failed to improve: it steps aside."""
        mine = [a for a in self.attempts if a.direction == direction and not a.baseline]
        return len(mine) >= 2 and not mine[-1].improved and not mine[-2].improved


def as_history(history: object) -> list[HistoryStep]:
    """Accept plain direction ids or HistoryStep items, oldest first."""
    steps: list[HistoryStep] = []
    for item in history or ():  # type: ignore[union-attr]
        if isinstance(item, HistoryStep):
            steps.append(item)
        elif isinstance(item, str):
            steps.append(HistoryStep(item))
        else:
            raise TypeError(f"history items must be str or HistoryStep, got {type(item).__name__}")
    return steps


def gain_of(state_before: MemoryState, outcome: Outcome) -> float | None:
    """Log speedup of the new candidate over the state's best; over eager when there is no best yet, which makes
    the candidate a baseline (``is_baseline``): the statistics keep those apart and never call them gains."""
    if not outcome.accepted or outcome.speedup_vs_eager is None:
        return None
    return math.log(outcome.speedup_vs_eager / (state_before.speedup or 1.0))


def squash(gain: float) -> float:
    """Log gain saturated smoothly at +-REWARD_CLIP (see there why)."""
    return REWARD_CLIP * math.tanh(gain / REWARD_CLIP)


def reward_of(accepted: bool, gain: float | None) -> float:
    """The scalar the policy learns from: saturated log gain, a fixed cost for a rejected candidate."""
    if not accepted:
        return FAIL_REWARD
    if gain is None:
        return UNKNOWN_GAIN_REWARD
    return squash(gain)


def improved_of(accepted: bool, gain: float | None, baseline: bool = False) -> bool:
    """Whether a candidate beat the best before its step. A baseline (a task's first accepted kernel: there was
    no best before it) never counts as an improvement; its gain is over eager, kept apart (``n_base``)."""
    return accepted and not baseline and (gain is None or gain > IMPROVE_EPS)


def is_baseline(accepted: bool, speedup_before: float | None) -> bool:
    """A task's first accepted kernel: nothing was accepted before it, so its gain is over eager PyTorch."""
    return bool(accepted) and speedup_before is None


# ---------------------------------------------------------------------------------------------- seed records


class Direction(BaseModel):
    """Level 1 of the HTG: a coarse optimization direction."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    name: str
    description: str
    applies_when: str
    bottlenecks: list[Bottleneck] = Field(description="bottlenecks this direction attacks")
    status_affinity: dict[Status, float] = Field(description="0..1 per status: how apt the direction is there")
    op_class_priors: dict[OpClass, float] = Field(description="0..1 per operator class: seed prior")

    @field_validator("status_affinity", "op_class_priors")
    @classmethod
    def _unit_interval(cls, v: dict[str, float]) -> dict[str, float]:
        for k, x in v.items():
            if not 0.0 <= x <= 1.0:
                raise ValueError(f"{k}: {x} is outside 0..1")
        return v

    def prior(self, op_class: str) -> float:
        return self.op_class_priors.get(op_class, 0.3)  # type: ignore[call-overload]

    def affinity(self, status: str) -> float:
        return self.status_affinity.get(status, 0.5)  # type: ignore[call-overload]


ShapeName = Literal["elements", "row", "reduce", "channels", "spatial"]
#: what each shape fact of a task is (the analyze node measures them on the reference's largest input)
SHAPE_FACTS: dict[str, str] = {
    "elements": "elements in the largest input",
    "row": "length of its last (contiguous) dimension",
    "reduce": "elements reduced or normalized together (one row of a softmax, one group of a GroupNorm)",
    "channels": "channels (dimension 1 of a 3-D or larger input)",
    "spatial": "spatial size (the product of the dimensions after the channels)",
}


class Applicability(BaseModel):
    """Where a strategy applies: operator classes, bottlenecks, backends, and optionally the task's shapes and
    the best kernel's measured state (its roofline fraction). A bound left out (or null) is open; a fact the
    task does not have (a 2-D input has no channels) never excludes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    op_classes: list[OpClass | Literal["any"]]
    bottlenecks: list[Bottleneck]
    backends: list[Backend]
    #: shape fact -> [min, max] (inclusive; null: open), e.g. {"reduce": [null, 8192]} for warp-per-row
    shapes: dict[ShapeName, tuple[int | None, int | None]] = Field(default_factory=dict)
    #: [min, max] roofline fraction of the task's best kernel (null: open); a task without a timed best passes
    roofline: tuple[float | None, float | None] | None = None

    def op_set(self) -> set[str]:
        return set(OP_CLASSES) if "any" in self.op_classes else set(self.op_classes)

    def why_not(self, shapes: dict[str, int], roofline: float | None) -> str:
        """'' when the task's shapes and state are inside the bounds, else the first reason in words."""
        for name, (lo, hi) in self.shapes.items():
            v = shapes.get(name)
            if v is None:
                continue
            if lo is not None and v < lo:
                return f"written for {name} >= {lo:,}; this task has {v:,}"
            if hi is not None and v > hi:
                return f"written for {name} <= {hi:,}; this task has {v:,}"
        if self.roofline is not None and roofline is not None:
            lo_r, hi_r = self.roofline
            if lo_r is not None and roofline < lo_r:
                return f"written for kernels at >= {lo_r:.0%} of the roofline; the best is at {roofline:.0%}"
            if hi_r is not None and roofline > hi_r:
                return f"written for kernels at <= {hi_r:.0%} of the roofline; the best is at {roofline:.0%}"
        return ""

    def bounds_text(self) -> str:
        """The shape and state bounds in words ('' when there are none)."""
        parts = []
        for name, (lo, hi) in self.shapes.items():
            if lo is not None and hi is not None:
                parts.append(f"{name} {lo:,}-{hi:,}")
            elif lo is not None:
                parts.append(f"{name} >= {lo:,}")
            elif hi is not None:
                parts.append(f"{name} <= {hi:,}")
        if self.roofline is not None:
            lo_r, hi_r = self.roofline
            if lo_r is not None:
                parts.append(f"best at >= {lo_r:.0%} of the roofline")
            if hi_r is not None:
                parts.append(f"best at <= {hi_r:.0%} of the roofline")
        return ", ".join(parts)


class Strategy(BaseModel):
    """Level 2 of the HTG: a concrete technique under one direction, with code sketches per backend."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    direction: str
    title: str
    description: str
    applicability: Applicability
    risks: str
    expected_effect: str
    code_sketch: dict[Backend, str]
    tags: list[str] = Field(default_factory=list)
    source: Literal["seed", "learned"] = "seed"
    #: for a learned card: where it came from and what it gained (task, state, speedups, run and step)
    evidence: dict[str, str | float | int | None] = Field(default_factory=dict)

    @field_validator("code_sketch", mode="before")
    @classmethod
    def _join_lines(cls, v: object) -> object:
        # Seed files keep sketches as arrays of lines so they stay readable and diffable.
        if isinstance(v, dict):
            return {k: "\n".join(x) if isinstance(x, list) else x for k, x in v.items()}
        return v

    @model_validator(mode="after")
    def _sketch_per_backend(self) -> Strategy:
        missing = set(self.applicability.backends) - set(self.code_sketch)
        if missing:
            raise ValueError(f"strategy {self.id}: no code sketch for backend(s) {sorted(missing)}")
        return self

    def document(self) -> str:
        """The text embedded for retrieval."""
        a = self.applicability
        bounds = a.bounds_text()
        return (f"{self.title}. {self.description} Applies to {', '.join(a.op_classes)} operators, "
                f"{', '.join(a.bottlenecks)}-bound" + (f", {bounds}" if bounds else "")
                + f". Effect: {self.expected_effect}")

    def applies(self, state: MemoryState) -> str:
        """'' when the strategy fits the state's shapes and measured state (``Applicability.why_not``)."""
        return self.applicability.why_not(state.shapes, state.roofline)

    def fits(self, op_class: str, backend: str, features: frozenset[str] = frozenset()) -> bool:
        """Applicability: written for this operator class and backend, and, when the reference's own operator
        classes are known, for one of them (a reduction strategy never goes to a conv + ReLU chain that happens
        to be classed "fused"). Generic classes (fused, model, other) do not count as a match on their own."""
        a = self.applicability
        ops = a.op_set()
        if backend not in a.backends or op_class not in ops:
            return False
        if not features or "any" in a.op_classes:
            return True
        specific = ops - GENERIC_CLASSES
        return not specific or bool(specific & (features | {op_class}))


# ---------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class EdgeStats:
    """Aggregated outcomes of one edge (or one strategy) in one state key; derived, never stored."""

    n: int = 0
    improved: int = 0
    failed: int = 0
    n_gain: int = 0
    sum_gain: float = 0.0
    sum_gain2: float = 0.0
    sum_reward: float = 0.0
    #: baselines (a task's first accepted kernel) and the sum of their log speedups over eager: counted in ``n``,
    #: never in ``improved`` or the gains, which are over the previous best
    n_base: int = 0
    sum_base: float = 0.0

    @property
    def base_gain(self) -> float | None:
        """Mean log speedup over eager of the baselines (None without one)."""
        return self.sum_base / self.n_base if self.n_base else None

    @property
    def success_rate(self) -> float:
        return self.improved / self.n if self.n else 0.0

    @property
    def mean_gain(self) -> float | None:
        return self.sum_gain / self.n_gain if self.n_gain else None

    @property
    def std_gain(self) -> float | None:
        if self.n_gain < 2:
            return None
        m = self.sum_gain / self.n_gain
        return math.sqrt(max(0.0, self.sum_gain2 / self.n_gain - m * m))


@dataclass
class ScoredDirection:
    """A direction ranked for the current state, with the parts of its score and a readable reason.

    ``reason`` lists every score term (for people and reports); ``summary`` is the short evidence an LLM is shown
    (what happened in this operator class and in this task), without the score's arithmetic."""

    id: str
    name: str
    score: float
    components: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    evidence: float = 0.0
    summary: str = ""
    #: in this task: "exploit" (its latest attempt improved the previous best), "explore" (untried, fits the
    #: state), "measured" (measured here without a gain), "" (nothing measured in the task yet, or unfit)
    role: str = ""


@dataclass
class RetrievedStrategy:
    """A strategy retrieved for the current state, with why it ranks where it does."""

    strategy: Strategy
    score: float
    similarity: float
    stats: EdgeStats
    reason: str = ""
    relaxed: bool = False  # True when found only after dropping the operator-class filter


@dataclass
class Note:
    """A learned note: what happened when a direction was taken in some state (retrieved by similarity).
    Identical notes are stored once; ``metadata['event_uid']`` names the first event that produced it."""

    id: str
    text: str
    similarity: float
    metadata: dict[str, object] = field(default_factory=dict)
