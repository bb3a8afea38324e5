"""The evaluation cap: a run stops when it has spent max_evaluations, whatever its step budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_agent.agent import run_optimization
from htam_agent.context import RunContext

from .scripted_coder import ScriptedCoder, softmax_task


@pytest.mark.slow  # fast lane: ~35 s, a run of real evaluations
def test_max_evaluations_stops_the_run(agent_env: Path) -> None:
    coder = ScriptedCoder([None] * 5)  # no code: a cheap, evaluated failure per candidate
    ctx = RunContext.from_env(backend="cpp", steps=5, candidates=2, max_evaluations=3, baselines=())
    result = run_optimization(softmax_task(), ctx, coder=coder)
    assert result.evaluations == 3 and len(coder.requests) == 3
    assert [s["candidates"] for s in result.steps] == [2, 1] and result.stop_reason == "budget"


def test_unsupported_task_stops_an_offline_run_at_once(agent_env: Path) -> None:
    from htam_agent.bundled_tasks import SUITE_DIR
    from htam_agent.memory.htam import HTAMemory

    ctx = RunContext.from_env(backend="cpp", steps=4, baselines=(), coder="exemplar")
    result = run_optimization(SUITE_DIR / "attention_sdpa.py", ctx)
    assert not result.correct and result.stop_reason == "unsupported" and result.evaluations == 1
    assert "not supported" in result.steps[0]["reason"] and "HTAM_MODEL" in result.steps[0]["reason"]
    with HTAMemory.open(agent_env / "memory") as mem:
        assert mem.transitions.events() == []  # nothing learned about directions from it
