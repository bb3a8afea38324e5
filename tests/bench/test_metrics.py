"""Bench metrics on hand-computed examples."""

from __future__ import annotations

import math

import pytest

from htam_agent.bench import metrics as M


def rec(method="m", correct=True, eager=None, compile=None, status="done", level="suite", category="x", **kw):
    return {"method": method, "correct": correct, "speedup_vs_eager": eager, "speedup_vs_compile": compile,
            "status": status, "level": level, "category": category, **kw}


RECS = [
    rec(eager=2.0, compile=1.0),          # correct, fast_1.5 eager, exactly 1.0 vs compile
    rec(eager=1.5, compile=0.5),          # exactly 1.5: fast_1 but not fast_1.5
    rec(eager=0.5, compile=0.25),         # correct but slower
    rec(correct=False, eager=3.0),        # incorrect with a (meaningless) speedup: never fast
    rec(correct=True, eager=None),        # correct but untimed
    rec(correct=True, eager=4.0, status="error"),  # an errored record never counts
]


def test_correctness_rate():
    assert M.correctness_rate(RECS) == pytest.approx(4 / 6)
    assert M.correctness_rate([]) is None


@pytest.mark.parametrize("p,expected", [(0.0, 3 / 6), (1.0, 2 / 6), (1.5, 1 / 6), (2.0, 0 / 6)])
def test_fast_p_vs_eager(p, expected):
    assert M.fast_p(RECS, p, "eager") == pytest.approx(expected)


def test_fast_p_strict_at_p_and_against_compile():
    # compile speedups of correct tasks: 1.0, 0.5, 0.25 -> fast_1 is 0 (1.0 is not > 1), fast_0 is 3/6
    assert M.fast_p(RECS, 1.0, "compile") == 0.0
    assert M.fast_p(RECS, 0.0, "compile") == pytest.approx(3 / 6)
    assert M.fast_p([rec(eager=1.0)], 1.0) == 0.0
    assert M.fast_p([rec(eager=1.0000001)], 1.0) == 1.0
    assert M.fast_p([], 1.0) is None


def test_incorrect_tasks_count_as_not_fast_in_the_denominator():
    recs = [rec(eager=3.0), rec(correct=False, eager=9.0), rec(correct=False)]
    assert M.fast_p(recs, 1.0) == pytest.approx(1 / 3)


def test_geomean_over_correct_timed_tasks_only():
    # correct timed eager speedups: 2.0, 1.5, 0.5 -> (1.5)^(1/3)
    assert M.geomean(M.correct_speedups(RECS, "eager")) == pytest.approx(1.5 ** (1 / 3))
    assert M.geomean([]) is None
    assert M.geomean([4.0, 1.0]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        M.geomean([1.0, 0.0])


def test_speedup_ignores_bad_values():
    assert M.speedup({"speedup_vs_eager": float("nan")}) is None
    assert M.speedup({"speedup_vs_eager": -1}) is None
    assert M.speedup({"speedup_vs_eager": "2"}) == 2.0


def test_summarize_and_grouping():
    recs = [rec("a", eager=2.0, level="level1", category="matmul", llm_calls=3, input_tokens=10, output_tokens=5,
                wall_seconds=2.0, evaluations=4),
            rec("a", correct=False, level="level2", category="fused", llm_calls=1, input_tokens=0,
                output_tokens=0, wall_seconds=4.0, evaluations=6),
            rec("b", eager=8.0, level="level1", category="matmul")]
    tab = M.table(recs)
    a = tab["a"]["all"]
    assert (a["tasks"], a["correct"], a["correctness"]) == (2, 1, 0.5)
    assert a["fast_eager"]["1.0"] == 0.5 and a["fast_eager"]["2.0"] == 0.0
    assert a["geomean_eager"] == pytest.approx(2.0) and a["timed_eager"] == 1 and a["geomean_compile"] is None
    assert a["llm_calls_total"] == 4 and a["tokens_total"] == 15 and a["wall_seconds_mean"] == 3.0
    assert a["evaluations_mean"] == 5.0
    by_level = M.table(recs, by="level")
    assert set(by_level["a"]) == {"level1", "level2"} and set(by_level["b"]) == {"level1"}
    assert by_level["a"]["level2"]["correctness"] == 0.0
    assert M.table(recs, by="category")["b"]["matmul"]["geomean_eager"] == pytest.approx(8.0)


def test_fast_p_curve_is_monotone_and_starts_at_fast_0():
    ps, ys = M.fast_p_curve(RECS, "eager")
    assert ys[0] == M.fast_p(RECS, 0.0)
    assert all(a >= b for a, b in zip(ys, ys[1:], strict=False))
    assert ys[-1] == 0.0 and ps[-1] > 2.0 and not any(math.isnan(y) for y in ys)
