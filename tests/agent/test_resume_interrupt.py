"""A run killed with SIGKILL resumes from its checkpoint; a person steers a run through interrupt()."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from htam_agent.agent import RunInterrupted, run_optimization
from htam_agent.context import RunContext

from .scripted_coder import GOOD_SOFTMAX, ScriptedCoder, softmax_task

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def _events(run_dir: Path) -> list[dict]:
    path = run_dir / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_kill9_mid_run_resumes_without_repeating_steps(agent_env: Path) -> None:
    run_id = "resume-test"
    run_dir = agent_env / "runs" / run_id
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, str(REPO / "tests/agent/run_in_subprocess.py"), run_id, "1"],
                            cwd=REPO, env=env, start_new_session=True)
    try:
        deadline = time.time() + 600
        while time.time() < deadline:  # wait until step 0 is done and step 1 is generating (sleeping)
            if any(e["event"] == "generate" and e["step"] == 1 for e in _events(run_dir)):
                break
            assert proc.poll() is None, "the run ended before it could be killed"
            time.sleep(0.5)
        else:
            pytest.fail("the run never reached step 1")
        time.sleep(1.0)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    before = _events(run_dir)
    assert [e["step"] for e in before if e["event"] == "step_done"] == [0]

    coder = ScriptedCoder([GOOD_SOFTMAX] * 3)
    ctx = RunContext.from_env(backend="cpp", steps=3, baselines=())
    result = run_optimization(softmax_task(), ctx, coder=coder, run_id=run_id, resume=True)
    assert result.correct and [s["step"] for s in result.steps] == [0, 1, 2]
    assert [r.step for r in coder.requests] == [1, 2]  # step 0 was not generated again
    after = _events(run_dir)[len(before):]
    assert not any(e.get("step") == 0 for e in after)

    from htam_agent.memory.htam import HTAMemory

    with HTAMemory.open(agent_env / "memory") as mem:
        evs = [e for _, e in mem.transitions.events() if e.run_id == run_id]
    assert len(evs) == 3  # one per step: nothing lost, nothing counted twice

    # a finished run keeps only its last checkpoint, and that is enough to resume to its result
    with closing(sqlite3.connect(run_dir / "checkpoints.sqlite")) as c:
        assert c.execute("SELECT count(*) FROM checkpoints WHERE thread_id=?", (run_id,)).fetchone()[0] == 1
    again = run_optimization(softmax_task(), ctx, coder=ScriptedCoder([]), run_id=run_id, resume=True)
    assert again.as_dict() == result.as_dict()


def test_person_changes_direction_then_edits_code(agent_env: Path) -> None:
    ctx = RunContext.from_env(backend="cpp", steps=2, baselines=(), interactive=True)
    coder = ScriptedCoder([GOOD_SOFTMAX])
    with pytest.raises(RunInterrupted) as info:
        run_optimization(softmax_task(), ctx, coder=coder, run_id="steered")
    assert info.value.payload["step"] == 0 and "memory_access" in info.value.payload["directions"]
    assert coder.requests == []  # paused before generation

    answers = iter([{"action": "direction", "direction": "memory_access"},
                    {"action": "code", "code": "# edited by a person\n" + GOOD_SOFTMAX}])
    seen: list[dict] = []

    def person(payload: dict) -> dict:
        seen.append(payload)
        return next(answers)

    result = run_optimization(softmax_task(), ctx, coder=coder, run_id="steered", resume=True, on_interrupt=person)
    assert [p["step"] for p in seen] == [0, 1]
    assert result.steps[0]["direction"] == "memory_access"
    assert all(s.startswith("ma_") for s in result.steps[0]["strategies"])
    assert len(coder.requests) == 1 and coder.requests[0].direction == "memory_access"
    code = (Path(result.artifact_dir) / "step_01" / "cand_0_r0" / "code.py").read_text()
    assert "edited by a person" in code
    person_meta = json.loads((Path(result.artifact_dir) / "step_01" / "direction.json").read_text())["person"]
    assert person_meta["action"] == "code"
