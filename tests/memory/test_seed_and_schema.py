"""The shipped knowledge (directions, strategies) and the vocabulary: complete, valid, written for every backend."""

from __future__ import annotations

import json
import math
import sys
from collections import Counter

import pytest

from htam_agent.memory.catalog import load_catalog
from htam_agent.memory.schema import (
    BACKENDS,
    BOTTLENECKS,
    MEMORY_STATUSES,
    OP_CLASSES,
    MemoryState,
    Outcome,
    StateKey,
    Strategy,
    gain_of,
    reward_of,
)


def test_at_least_seven_directions_with_priors_for_every_operator_class():
    cat = load_catalog()
    assert len(cat.directions) >= 7
    for d in cat.directions:
        assert d.description and d.applies_when
        assert set(d.op_class_priors) == set(OP_CLASSES), d.id
        assert set(d.status_affinity) == set(MEMORY_STATUSES), d.id


def test_at_least_forty_strategies_spread_over_all_directions_and_backends():
    cat = load_catalog()
    assert len(cat.strategies) >= 40
    per_dir = Counter(s.direction for s in cat.strategies)
    assert set(per_dir) == {d.id for d in cat.directions}
    assert min(per_dir.values()) >= 5
    per_backend = Counter(b for s in cat.strategies for b in s.applicability.backends)
    assert all(per_backend[b] >= 30 for b in BACKENDS)
    covered_ops = set().union(*(s.applicability.op_set() for s in cat.strategies))
    assert covered_ops == set(OP_CLASSES)


@pytest.mark.parametrize("sid", [s.id for s in load_catalog().strategies])
def test_each_strategy_is_complete(sid):
    s = next(x for x in load_catalog().strategies if x.id == sid)
    assert s.title and s.description and s.risks and s.expected_effect
    assert s.applicability.op_classes and s.applicability.bottlenecks and s.applicability.backends
    for b in s.applicability.backends:
        code = s.code_sketch[b]
        assert len(code.splitlines()) >= 3, f"{sid}/{b}: code sketch too short"
    if "triton" in s.code_sketch:
        assert any(t in s.code_sketch["triton"] for t in ("tl.", "triton", "[grid]")), sid


def test_a_sketch_missing_for_a_listed_backend_is_rejected():
    base = load_catalog().strategies[0].model_dump()
    with pytest.raises(ValueError, match="no code sketch for backend"):
        Strategy(**{**base, "code_sketch": {"cuda": "x"}})


def test_seed_files_live_directly_in_the_seed_folder():
    """pyproject ships `memory/seed/*`: no subfolders."""
    from importlib import resources

    root = resources.files("htam_agent.memory") / "seed"
    entries = list(root.iterdir())
    assert entries and all(e.is_file() for e in entries)
    for e in entries:
        json.loads(e.read_text())


def test_vocabulary_is_checked():
    with pytest.raises(ValueError, match="operator class"):
        StateKey("gemm")
    with pytest.raises(ValueError, match="bottleneck"):
        StateKey("matmul", "io")
    with pytest.raises(ValueError, match="status"):
        Outcome(True, "fast")
    with pytest.raises(ValueError, match="speedup"):
        Outcome(True, "correct_slow", float("nan"))
    assert set(BOTTLENECKS) >= {"memory", "compute", "latency", "occupancy", "unknown"}


def test_gain_and_reward():
    st = MemoryState(StateKey("matmul"), speedup=0.5)
    assert math.isclose(gain_of(st, Outcome(True, "correct_slow", 1.0)), math.log(2))
    assert gain_of(MemoryState(StateKey("matmul")), Outcome(True, "correct_slow", 2.0)) == math.log(2)  # vs eager
    assert gain_of(st, Outcome(False, "incorrect", None, "nan")) is None
    assert reward_of(False, None) == -0.5
    assert math.isclose(reward_of(True, 10.0), math.log(2), rel_tol=1e-6)  # saturates at log 2
    assert math.isclose(reward_of(True, math.log(1.05)), math.log(1.05), rel_tol=0.01)  # small gains stay log gains
    assert reward_of(True, math.log(32)) < 1.35 * reward_of(True, math.log(2))  # x32 barely beats a doubling


def test_importing_the_package_is_cheap():
    import subprocess

    code = ("import sys, htam_agent.memory as m; m.HTAMemory; m.MemoryState; "
            "print(any(x in sys.modules for x in ('chromadb', 'torch', 'sentence_transformers')))")
    from conftest import subprocess_env

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
