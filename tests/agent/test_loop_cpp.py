"""The whole loop on the cpp backend: real compilation, timing, Chroma memory and SQLite checkpointer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_agent.agent import run_optimization
from htam_agent.context import RunContext

from .scripted_coder import BROKEN_CPP, GOOD_SOFTMAX, ScriptedCoder, softmax_task

pytestmark = pytest.mark.slow


def test_repair_then_accept_then_learn(agent_env: Path) -> None:
    coder = ScriptedCoder([BROKEN_CPP, GOOD_SOFTMAX, GOOD_SOFTMAX])
    ctx = RunContext.from_env(backend="cpp", steps=2, max_repairs=1, baselines=("eager",))
    events: list[dict] = []
    result = run_optimization(softmax_task(), ctx, coder=coder, on_event=events.append)

    # step 0: compile error, repaired with the evaluator's message, accepted
    assert [r.repair for r in coder.requests] == [0, 1, 0]
    assert "compile_error" in coder.requests[1].feedback
    assert coder.requests[1].failed_code == BROKEN_CPP
    assert coder.requests[2].best_code == GOOD_SOFTMAX  # step 1 builds on the best kernel
    assert result.correct and result.evaluations == 3
    assert [s["repairs"] for s in result.steps] == [1, 0]
    assert result.steps[0]["direction"] and result.steps[0]["strategies"]
    assert result.best_speedup_vs_eager and result.best_speedup_vs_eager > 0
    assert result.stop_reason == "budget" and not result.uses_llm

    root = Path(result.artifact_dir)
    compile_v = json.loads((root / "step_00" / "cand_0_r0" / "compile.json").read_text())
    assert compile_v["status"] == "compile_error" and "not C++" in compile_v["compiler_message"]
    assert json.loads((root / "step_00" / "cand_0_r1" / "verdict.json").read_text())["accepted"]
    assert "class ModelNew" in (root / "best_kernel.py").read_text()
    report = (root / "report.md").read_text()
    assert "| 0 |" in report and "| 1 |" in report and (root / "speedup.png").stat().st_size > 1000
    assert json.loads((root / "step_01" / "direction.json").read_text())["direction"]["id"]
    assert any(e["event"] == "verdict" and e["status"] == "compile_error" for e in events)

    # the memory learned both steps, once each, with the edge start -> d0 -> d1
    from htam_agent.memory.htam import HTAMemory

    with HTAMemory.open(agent_env / "memory") as mem:
        evs = [e for _, e in mem.transitions.events()]
        assert len(evs) == 2
        assert evs[0].prev_direction == "start" and evs[1].prev_direction == result.steps[0]["direction"]
        assert all(e.accepted for e in evs) and evs[0].run_id == result.run_id


def test_flat_and_none_memory_modes_run(agent_env: Path) -> None:
    ctx = RunContext.from_env(backend="cpp", steps=1, baselines=(), memory_mode="none")
    res = run_optimization(softmax_task(), ctx, coder=ScriptedCoder([GOOD_SOFTMAX]))
    assert res.correct and res.steps[0]["direction"] is None and res.method.startswith("memory=none")
    flat = run_optimization(softmax_task(), ctx.with_(memory_mode="flat"), coder=ScriptedCoder([GOOD_SOFTMAX]))
    assert flat.correct and flat.steps[0]["strategies"] and flat.steps[0]["direction"]


def test_no_code_reply_is_recorded_not_crashed(agent_env: Path) -> None:
    ctx = RunContext.from_env(backend="cpp", steps=1, max_repairs=0, baselines=())
    res = run_optimization(softmax_task(), ctx, coder=ScriptedCoder([None]))
    assert not res.correct and res.steps[0]["status"] == "invalid_candidate"
    assert "no candidate code" in res.steps[0]["reason"]
