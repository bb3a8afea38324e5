"""One real conversation: the chat agent (create_agent over the chat tools) driven by the real ChatOpenAI client
over HTTP against the local scripted server, whose replies call the tools. The runs are real: cpp backend,
the offline exemplar coder, real compilation and timing, SQLite checkpoints, the memory.

It optimizes a task pausing for the person, changes the direction mid-run, takes the person's own (wrong)
code, explains why that candidate was rejected, and exports the best kernel; another chat, whose process is
killed mid-run, is resumed from a new chat.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from htam_agent.chat.runview import RunView, list_runs

from .scripted import TASK, WRONG_RMSNORM, call, session

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]  # real C++ builds, cold on a busy host
TESTS = Path(__file__).resolve().parents[1]


def _turn(s, text: str) -> dict:
    events = list(s.send(text))
    assert not [e for e in events if e.kind == "error"], [e.text for e in events if e.kind == "error"]
    results = [e for e in events if e.kind == "tool_result"]
    return {"events": events, "tools": [e.name for e in events if e.kind == "tool_call"],
            "result": results[-1].text if results else "", "reply": "".join(e.text for e in events if e.kind == "token"),
            "run_events": [e.data for e in events if e.kind == "run"]}


def test_conversation_optimizes_steers_explains_and_exports(chat_env: Path, openai_server) -> None:
    s = session(openai_server.url, steps=2)

    openai_server.push(call("optimize", task=str(TASK), steps=2, interactive=True),
                       "The run is paused before step 0.")
    t1 = _turn(s, "make this RMSNorm faster on my CPU, I want to steer it")
    assert t1["tools"] == ["optimize"] and t1["reply"] == "The run is paused before step 0."
    paused = json.loads(t1["result"])
    assert paused["state"] == "paused" and paused["step"] == 0
    assert any(e.get("event") == "direction" for e in t1["run_events"])  # progress streamed while the tool ran
    # the model saw the tool's answer
    assert any(m.get("role") == "tool" and "paused" in m.get("content", "") for m in openai_server.chat_requests[-1].messages)
    run_id = paused["run_id"]

    other = "memory_access" if paused["direction"] != "memory_access" else "data_reuse"
    openai_server.push(call("steer_run", action="direction", direction=other), f"Step 0 took {other}.")
    t2 = _turn(s, f"no, try {other} instead")
    after = json.loads(t2["result"])
    assert after["state"] == "paused" and after["step"] == 1, after
    view = RunView(chat_env / "runs" / run_id)
    assert view.steps[0].direction == other and view.steps[0].chosen_by == "person: direction"
    assert len(view.attempts) == 1 and view.attempts[0].readout.accepted, view.attempts[0].readout.brief()

    openai_server.push(call("steer_run", action="code", code=WRONG_RMSNORM), "I evaluated your kernel.")
    t3 = _turn(s, "use my kernel for the next step")
    done = json.loads(t3["result"])
    assert done["state"] == "finished" and done["correct"], done
    view = RunView(chat_env / "runs" / run_id)
    mine = view.attempt(2)
    assert mine is not None and mine.step == 1 and not mine.readout.accepted
    assert mine.readout.status == "incorrect" and "rinv;" in mine.code

    openai_server.push(call("explain_verdict", run_id=run_id, candidate=2),
                       "Candidate 2 computed a different result.")
    t4 = _turn(s, "why was candidate 2 rejected?")
    why = t4["result"]
    assert why.startswith("candidate 2 (step 1") and "not accepted (incorrect)" in why, why
    assert "failed on trial" in why and "What to change" in why, why

    dest = chat_env / "exported" / "rmsnorm_kernel.py"
    openai_server.push(call("export_kernel", run_id=run_id, path=str(dest)), "Exported.")
    t5 = _turn(s, "export the best kernel")
    out = json.loads(t5["result"])
    assert Path(out["path"]) == dest.resolve() and out["speedup_vs_eager"] == view.attempts[0].readout.speedup_vs_eager
    assert dest.read_text() == (view.root / "best_kernel.py").read_text() and "class ModelNew" in dest.read_text()
    assert openai_server.remaining == 0 and len(openai_server.chat_requests) == 10  # a call and a reply per turn
    s.close()


def test_pasted_code_that_is_not_a_task_says_what_is_missing(chat_env: Path, openai_server) -> None:
    s = session(openai_server.url)
    openai_server.push(call("optimize", task="import torch\nclass Net(torch.nn.Module):\n    pass\n"),
                       "That code is not a task yet.")
    t = _turn(s, "optimize this")
    assert t["result"].startswith("error: this is not a KernelBench task yet")
    for missing in ("class Model(nn.Module)", "get_inputs()", "get_init_inputs()"):
        assert missing in t["result"], t["result"]
    assert list_runs(chat_env / "runs") == []  # nothing started
    s.close()


def test_a_failing_endpoint_says_what_to_fix(chat_env: Path, openai_server) -> None:
    s = session(openai_server.url)
    openai_server.push({"status": 404})
    events = list(s.send("hello"))
    errors = [e.text for e in events if e.kind == "error"]
    assert len(errors) == 1 and "--model" in errors[0] and "--base-url" in errors[0], errors
    s.close()


def test_resume_after_the_chat_process_is_killed(chat_env: Path, openai_server) -> None:
    openai_server.push(call("optimize", task=str(TASK), steps=2))
    proc = subprocess.Popen([sys.executable, str(TESTS / "chat" / "chat_in_subprocess.py"), openai_server.url, "2",
                             "optimize the rmsnorm task"], start_new_session=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs = chat_env / "runs"
    try:
        deadline = time.time() + 600
        while time.time() < deadline:  # kill once step 0 is done and step 1 is on its way
            views = list_runs(runs)
            if views and any(e.get("event") == "generate" and e.get("step") == 1 for e in views[0].events):
                break
            assert proc.poll() is None, "the chat ended before it could be killed"
            time.sleep(0.1)
        else:
            pytest.fail("the run never reached step 1")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    (before,) = list_runs(runs)
    assert before.result is None and before.state() == "stopped (resumable)"
    assert [s.step for s in before.steps if s.done] == [0]
    n_before = len(before.events)

    s = session(openai_server.url, steps=2)
    openai_server.push(call("resume_run"), "The run finished.", call("export_kernel", path=str(chat_env / "k.py")),
                       "Exported.")
    t = _turn(s, "my chat crashed; continue the run")
    res = json.loads(t["result"])
    assert res["state"] == "finished" and res["run_id"] == before.run_id, res
    after = RunView(before.root)
    assert [st.step for st in after.steps if st.done] == [0, 1]
    assert not any(e.get("step") == 0 for e in after.events[n_before:])  # step 0 was not done again
    t = _turn(s, "export it")
    assert json.loads(t["result"])["run_id"] == before.run_id and (chat_env / "k.py").is_file()
    s.close()
