"""The contract between the generation node and whatever writes the code (an LLM, or the offline exemplars).

A request carries everything a step knows: the task, the backend, the chosen direction with its reason, the
retrieved strategies with their sketches, the current best code and verdict, the evaluator's feedback when
the step is a repair, and what this task already tried (so that no coder writes the same candidate twice). A
proposal carries the code (or None with a reason), what was asked and answered (for the artifact folder), and
the cost (LLM calls and tokens; zero for the exemplar coder).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class UnsupportedTask(Exception):
    """The coder cannot write a candidate for this task (the message says why and what to configure)."""


class SpaceExhausted(Exception):
    """A deterministic coder has measured everything it can write for this task: a new step would only submit
    an earlier candidate again (a wasted evaluation shown as a new one), so the run stops instead."""


@dataclass(frozen=True)
class StrategyBrief:
    """A retrieved local strategy as a coder sees it: id, title, why it applies, and the backend's sketch."""

    id: str
    title: str
    summary: str = ""
    sketch: str = ""
    risks: str = ""


@dataclass(frozen=True)
class DirectionAdvice:
    """One direction as the memory ranks it for this state, with the evidence behind the rank (advice, not an
    order: the coder may depart from it and declares what it applied)."""

    id: str
    name: str = ""
    evidence: str = ""
    score: float | None = None


@dataclass(frozen=True)
class TriedCandidate:
    """A candidate this task already evaluated (an earlier step's, its last repair): what it applied and what it
    measured. The exemplar coder reads the knobs from ``code`` to never write it again; the prompt shows one line
    per attempt (not the code), so a model does not resubmit an approach that was already measured."""

    step: int
    direction: str | None
    strategies: tuple[str, ...] = ()
    accepted: bool = False
    speedup_vs_eager: float | None = None
    outcome: str = ""                              # one line: what the evaluator said
    code: str = ""


@dataclass(frozen=True)
class CodeRequest:
    task_name: str
    task_source: str
    backend: str                                   # cuda | triton | cpp
    op_class: str = "other"                        # memory.schema.OP_CLASSES
    direction: str | None = None                   # memory direction id
    direction_reason: str = ""
    strategies: tuple[StrategyBrief, ...] = ()
    best_code: str | None = None                   # current best accepted candidate, if any
    best_verdict: dict[str, Any] | None = None
    feedback: str = ""                             # evaluator reason for the candidate being repaired
    failed_code: str | None = None                 # the candidate being repaired
    repair: int = 0                                # 0: fresh candidate; n: n-th repair of failed_code
    variant: int = 0                               # index of this candidate among the step's candidates
    step: int = 0
    notes: tuple[str, ...] = ()                    # learned notes retrieved from memory
    advice: tuple[DirectionAdvice, ...] = ()       # the ranked directions with their evidence (best first)
    tried: tuple[TriedCandidate, ...] = ()         # this task's earlier candidates, oldest first


@dataclass
class CodeProposal:
    code: str | None                               # a full KernelBench candidate source (defines ModelNew)
    coder: str                                     # "exemplar" or the model name
    uses_llm: bool
    prompt: str = ""                               # what was asked (rendered prompt / exemplar description)
    reply: str = ""                                # raw answer (LLM text / exemplar notes)
    strategy_ids: list[str] = field(default_factory=list)  # strategies the code actually applies
    direction: str | None = None                   # the direction the code applies, when the coder says (declared)
    declared: bool = False                         # the reply declared what it applied (direction/strategies)
    plan: str = ""                                 # the reply's plan paragraph (for learned strategy cards)
    error: str = ""                                # why code is None (no code block, wrong backend, ...)
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@runtime_checkable
class Coder(Protocol):
    name: str
    uses_llm: bool

    def propose(self, request: CodeRequest) -> CodeProposal:
        """Write one candidate. Raise UnsupportedTask when the task is out of reach (never return junk)."""
        ...
