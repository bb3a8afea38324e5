"""The chat without a model, what a pasted task lacks, langgraph.json's chat graph, and the lazy imports."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from htam_agent.chat.agent import NO_MODEL, ChatSession
from htam_agent.chat.explain import check_task_source, task_problems
from htam_agent.chat.runs import RunManager
from htam_agent.context import RunContext

ROOT = Path(__file__).resolve().parents[2]


def _session(**ctx: object) -> ChatSession:
    return ChatSession(RunManager(RunContext.from_env(backend="cpp", coder="exemplar", **ctx)))


def _say(s: ChatSession, text: str) -> list:
    return list(s.send(text))


def test_without_a_model_it_says_so_and_offers_what_works(chat_env: Path) -> None:
    s = _session()
    assert s.greeting().startswith(NO_MODEL) and "/optimize" in s.greeting() and "/explain" in s.greeting()
    (ev,) = _say(s, "make my softmax faster")
    assert ev.kind == "reply" and ev.text.startswith("No chat model is configured") and "/memory" in ev.text
    (runs,) = _say(s, "/runs")
    assert runs.kind == "reply" and runs.text.startswith("No runs yet")  # prose for a person
    (raw,) = _say(s, "/runs --json")
    assert raw.kind == "reply" and json.loads(raw.text) == []  # JSON only when asked
    (err,) = _say(s, "/explain")
    assert err.kind == "error" and "no run yet" in err.text
    (bad,) = _say(s, "/optimize no/such/task.py")
    assert bad.kind == "error" and "no such task file" in bad.text


def test_memory_for_a_class_without_a_model(chat_env: Path) -> None:
    (said,) = _say(_session(), "/memory directions op_class=normalization")
    assert said.text.startswith("The memory at") and "parallel_mapping: prior" in said.text, said.text
    (ev,) = _say(_session(), "/memory directions op_class=normalization --json")
    out = json.loads(ev.text)
    priors = [d["prior"] for d in out["directions"]]
    assert out["op_class"] == "normalization" and len(priors) == 8 and priors == sorted(priors, reverse=True)
    assert out["recorded_transitions"] == 0  # a fresh memory: nothing taken yet
    (bad,) = _say(_session(), "/memory directions op_class=layernorms")
    assert bad.kind == "error" and "normalization" in bad.text  # names the classes there are


def test_pasted_code_that_is_not_a_task_names_every_missing_piece() -> None:
    problems = task_problems("import torch\nclass Model(torch.nn.Module):\n    pass\n")
    assert len(problems) == 3
    assert "forward" in problems[0] and "get_inputs()" in problems[1] and "get_init_inputs()" in problems[2]
    assert task_problems("def f(:\n")[0].startswith("line 1: syntax error")
    good = (ROOT / "htam_agent" / "bundled_tasks" / "suite" / "norm_rmsnorm.py").read_text()
    assert check_task_source(good) is None
    # loads, but its get_inputs fails: the loader's own message comes through
    broken = good.replace("return [torch.randn(BATCH, DIM)]", "return [undefined_name]")
    msg = check_task_source(broken)
    assert msg is not None and "get_inputs" in msg and "undefined_name" in msg


def test_langgraph_json_serves_the_chat_agent_beside_the_htam_graph(monkeypatch) -> None:
    graphs = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    assert set(graphs) == {"htam", "htam_chat"}
    path, attr = graphs["htam_chat"].split(":")
    spec = importlib.util.spec_from_file_location("langgraph_htam_chat", ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # as langgraph dev loads it: by file path
    monkeypatch.delenv("HTAM_MODEL", raising=False)
    reply = getattr(module, attr)().invoke({"messages": [("user", "hi")]})["messages"][-1].content
    assert "HTAM_MODEL" in reply and "/optimize" in reply
    monkeypatch.setenv("HTAM_MODEL", "some-model")
    monkeypatch.setenv("HTAM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    agent = getattr(module, attr)()
    assert {"model", "tools"} <= set(agent.get_graph().nodes) and "messages" in agent.get_input_jsonschema()["properties"]


def test_import_htam_agent_loads_no_chat_or_ui() -> None:
    code = ("import sys, htam_agent, htam_agent.cli; print([m for m in sys.modules if m.split('.')[0] in "
            "('langchain', 'gradio', 'langgraph') or m.startswith(('htam_agent.chat', 'htam_agent.ui'))])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout.strip().replace("'", '"')) == []


def test_evaluate_a_candidate_and_explain_its_verdict_without_a_model(chat_env: Path) -> None:
    cand = chat_env / "mine.py"
    cand.write_text("import torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def __init__(self, dim, eps=1e-6):\n"
                    "        super().__init__()\n\n    def forward(self, x):\n        return x * 0\n")
    # no baselines: the candidate is turned down before any timing, and the default's torch.compile baseline
    # (a cold inductor compile, most of this test's 22-74 s) would be timed for nothing
    s = _session(baselines=())
    task = ROOT / "htam_agent" / "bundled_tasks" / "suite" / "norm_rmsnorm.py"
    (ev,) = _say(s, f"/eval {task} {cand} --json")
    out = json.loads(ev.text)
    assert out["accepted"] is False and "invalid_candidate" in out["verdict"] and "load_inline" in out["verdict"]
    (why,) = _say(s, f"/explain {out['eval_id']}")
    assert why.text.startswith(f"evaluation {out['eval_id']} was not accepted (invalid candidate)")
    assert "What to change" in why.text and "load_inline" in why.text


def test_htam_chat_command_without_a_model_and_with_an_unreachable_endpoint(chat_env: Path) -> None:
    import socket

    from typer.testing import CliRunner

    from htam_agent.cli import app

    res = CliRunner().invoke(app, ["chat", "--backend", "cpp", "-m", "/runs"])
    assert res.exit_code == 0 and "No chat model is configured" in res.output and "No runs yet" in res.output, \
        res.output
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = CliRunner().invoke(app, ["chat", "--model", "m", "--base-url", f"http://127.0.0.1:{port}/v1", "-m", "hi"])
    out = " ".join(res.output.split())
    assert res.exit_code == 0 and "cannot reach the LLM endpoint" in out and "--base-url" in out, out
