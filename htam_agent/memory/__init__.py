"""HTAM memory: the Hierarchical Transition Graph, its stores and its selection policy.

Importing this package is cheap: names resolve lazily, and chromadb / torch / the embedding model load only when
strategies are first retrieved. Typical use by the agent::

    from htam_agent.memory import HTAMemory, MemoryState, StateKey, Outcome
    mem = HTAMemory.open()                       # $HTAM_MEMORY_DIR or the per-user data directory
    state = MemoryState(StateKey("matmul", "compute", "correct_slow", "cuda"), "fp32 GEMM 4096^2", speedup=0.4)
    ranked = mem.select_directions(state, history=["memory_access"], seed=0)
    strategies = mem.retrieve_strategies(ranked[0].id, state, k=4)
    mem.record(state, ranked[0].id, [s.strategy.id for s in strategies[:2]],
               Outcome(accepted=True, status="correct_slow", speedup_vs_eager=0.7), history=["memory_access"])
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "HTAMemory": "htam", "EdgeRow": "htam", "StrategyRow": "htam",
    "MemoryConfig": "config",
    "PolicyConfig": "policy",
    "RetrievalConfig": "retrieval",
    "MemoryFormatError": "io", "ImportReport": "io",
    "MemoryStoreError": "transitions", "Event": "transitions",
    "StateKey": "schema", "MemoryState": "schema", "Outcome": "schema", "HistoryStep": "schema",
    "Direction": "schema", "Strategy": "schema", "ScoredDirection": "schema", "RetrievedStrategy": "schema",
    "Note": "schema", "EdgeStats": "schema", "OP_CLASSES": "schema", "BOTTLENECKS": "schema",
    "MEMORY_STATUSES": "schema", "BACKENDS": "schema",
}
__all__ = [
    "BACKENDS",
    "BOTTLENECKS",
    "Direction",
    "EdgeRow",
    "EdgeStats",
    "Event",
    "HTAMemory",
    "HistoryStep",
    "ImportReport",
    "MemoryConfig",
    "MemoryFormatError",
    "MemoryState",
    "MemoryStoreError",
    "Note",
    "OP_CLASSES",
    "Outcome",
    "PolicyConfig",
    "RetrievalConfig",
    "RetrievedStrategy",
    "MEMORY_STATUSES",
    "ScoredDirection",
    "StateKey",
    "Strategy",
    "StrategyRow",
]

if TYPE_CHECKING:
    from .config import MemoryConfig
    from .htam import EdgeRow, HTAMemory, StrategyRow
    from .io import ImportReport, MemoryFormatError
    from .policy import PolicyConfig
    from .retrieval import RetrievalConfig
    from .schema import (
        BACKENDS,
        BOTTLENECKS,
        MEMORY_STATUSES,
        OP_CLASSES,
        Direction,
        EdgeStats,
        HistoryStep,
        MemoryState,
        Note,
        Outcome,
        RetrievedStrategy,
        ScoredDirection,
        StateKey,
        Strategy,
    )
    from .transitions import Event, MemoryStoreError


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value
