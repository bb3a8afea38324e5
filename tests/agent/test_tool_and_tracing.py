"""The agent as a LangChain tool called by a LangChain agent; the run traced to a local LangSmith endpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from htam_agent.agent.tool import make_optimize_tool
from htam_agent.context import RunContext

from .scripted_coder import GOOD_SOFTMAX, ScriptedCoder, softmax_task

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


class ScriptedToolModel(GenericFakeChatModel):
    """LangChain's fake chat model, able to be bound to tools (it replays tool calls from its script)."""

    def bind_tools(self, tools, **kwargs):  # noqa: ANN001, ANN003 - LangChain's signature
        return self


def test_langchain_agent_calls_optimize_kernel(agent_env: Path) -> None:
    from langchain.agents import create_agent

    coder = ScriptedCoder([GOOD_SOFTMAX])
    tool = make_optimize_tool(RunContext.from_env(backend="cpp", steps=1, baselines=("eager",)), coder=coder)
    assert set(tool.args) == {"task", "backend", "steps", "candidates"}
    source = softmax_task().read_text()
    model = ScriptedToolModel(messages=iter([
        AIMessage(content="", tool_calls=[{"name": "optimize_kernel", "id": "call_1",
                                           "args": {"task": source, "backend": "cpp", "steps": 1}}]),
        AIMessage(content="Done: the kernel is verified."),
    ]))
    agent = create_agent(model, [tool])
    out = agent.invoke({"messages": [{"role": "user", "content": "make this softmax faster"}]})
    tool_msgs = [m for m in out["messages"] if m.type == "tool"]
    assert len(tool_msgs) == 1
    result = json.loads(tool_msgs[0].content)
    assert result["correct"] and result["speedup_vs_eager"] > 0
    assert "class ModelNew" in result["best_kernel"] and Path(result["best_kernel_path"]).is_file()
    assert result["steps"][0].startswith("0: ") and not result["uses_llm"]
    assert out["messages"][-1].content == "Done: the kernel is verified."
    assert len(coder.requests) == 1 and coder.requests[0].backend == "cpp"


def test_bad_task_argument_is_a_clear_tool_error(agent_env: Path) -> None:
    tool = make_optimize_tool(RunContext.from_env(backend="cpp", steps=1), coder=ScriptedCoder([]))
    with pytest.raises(ValueError, match="neither an existing file nor Python source"):
        tool.invoke({"task": "no/such/task.py"})


def test_run_is_traced_with_names_tags_and_metadata(agent_env: Path, openai_server, langsmith_server) -> None:
    openai_server.push("```python\n" + GOOD_SOFTMAX + "\n```")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_"))}
    env.update(LANGSMITH_TRACING="true", LANGSMITH_ENDPOINT=langsmith_server.url, LANGSMITH_API_KEY="lsv2-dummy",
               LANGSMITH_PROJECT="htam-tests", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
               PYTHONPATH=str(REPO), TRACE_KEY="sk-local")
    done = subprocess.run([sys.executable, str(REPO / "tests/agent/trace_run.py"), openai_server.url], env=env,
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = langsmith_server.wait_for_runs(
        lambda rs: any(r.get("name") == "htam optimize norm_softmax" and r.get("end_time") for r in rs),
        timeout_s=30)
    root = next(r for r in runs if r.get("name") == "htam optimize norm_softmax")
    assert {"htam", "cpp", "coder:scripted-model", "memory:htam"} <= set(root["tags"])
    meta = root["extra"]["metadata"]
    assert meta["task"] == "norm_softmax" and meta["backend"] == "cpp" and meta["model"] == "scripted-model"
    names = {r.get("name") for r in runs}
    assert {"analyze", "select_direction", "retrieve", "generate", "evaluate", "update_memory"} <= names
    llm = [r for r in runs if r.get("run_type") == "llm"]
    assert llm and all(r["extra"]["metadata"]["step"] == 0 for r in llm)
    assert llm[0]["extra"]["metadata"]["direction"] == json.loads(done.stdout.strip().splitlines()[-1])["direction"]
