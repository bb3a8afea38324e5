"""The evaluation gateway: the one door from a candidate to its verdict (replay, special verdicts, the tools).

Real Evaluator and VerdictStore; replay needs no build, so these run in seconds. Local evaluation through the
gateway is covered by the agent's cpp loop tests and `htam eval`'s tests.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import ToolMessage

from htam_agent.bundled_tasks import CANDIDATES_DIR, SUITE_DIR
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.gateway import EvaluationGateway, resolve_mode
from htam_agent.evaluation.parent.options import EvalOptions
from htam_agent.evaluation.parent.store import VerdictStore

TASK = SUITE_DIR / "norm_softmax.py"
CODE = (CANDIDATES_DIR / "norm_softmax" / "cuda_online.py").read_text()


@pytest.fixture
def replaying(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_DEVICE_NAME", "NVIDIA H200")
    ev = Evaluator(EvalOptions(backend="cuda"), store=VerdictStore(tmp_path / "verdicts"))
    return EvaluationGateway(ev, mode="replay")


def _store_verdict(gateway: EvaluationGateway, cand: Candidate, **fields) -> str:
    key = gateway.evaluator.key(cand)
    gateway.evaluator.store.put(key, {"schema": 1, "status": "accepted", "accepted": True, **fields})
    return key


def test_replay_answers_from_the_store_and_says_when_it_cannot(replaying):
    cand = Candidate(task_path=str(TASK), source=CODE)
    missing = replaying.benchmark(cand)
    assert missing["status"] == "error" and missing["not_evaluated"] is True
    assert "htam verdicts import" in missing["reason"] and not missing["accepted"]
    _store_verdict(replaying, cand, speedup_vs_eager=1.5)
    for call in (replaying.compile, replaying.verify, replaying.benchmark):
        got = call(cand)
        assert got["cached"] is True and got["speedup_vs_eager"] == 1.5


def test_the_candidate_carries_its_task_source(replaying, tmp_path):
    """A task file edited after the run read it does not change what the candidate is evaluated against."""
    task = tmp_path / "softmax.py"
    original = TASK.read_text()
    task.write_text(original)
    cand = Candidate(task_path=str(task), source=CODE, task_source=original)
    _store_verdict(replaying, cand, speedup_vs_eager=2.0)
    task.write_text(original.replace("import torch", "import torch  # edited", 1))  # e.g. before --resume
    again = Candidate(task_path=str(task), source=CODE, task_source=original)
    assert replaying.benchmark(again)["speedup_vs_eager"] == 2.0
    reread = Candidate(task_path=str(task), source=CODE)  # reading the file again is another task
    assert reread.task_source != original and replaying.benchmark(reread).get("not_evaluated") is True


def test_no_code_is_a_repairable_verdict_not_a_measurement(replaying):
    v = replaying.no_code("softmax", "the reply had no code block")
    assert v["status"] == "invalid_candidate" and v["no_code"] is True and not v["accepted"]
    assert "the reply had no code block" in v["reason"] and v["backend"] == "cuda"


def test_modes_are_checked():
    assert resolve_mode("auto", "cpp") == "local"
    assert resolve_mode("replay", "cpp") == "replay"
    with pytest.raises(ValueError, match="auto, local, replay"):
        resolve_mode("remote", "cuda")
    with pytest.raises(ValueError, match="resolve `auto` first"):
        EvaluationGateway(Evaluator(EvalOptions(backend="cpp")), mode="auto")  # type: ignore[arg-type]


def test_langchain_tools_are_thin_wrappers_over_the_gateway(replaying):
    from htam_agent.tools.evaluator_tools import make_evaluator_tools

    cand = Candidate(task_path=str(TASK), source=CODE)
    _store_verdict(replaying, cand, speedup_vs_eager=1.25, reason="")
    tools = {t.name: t for t in make_evaluator_tools(replaying)}
    assert set(tools) == {"compile_kernel", "verify_kernel", "benchmark_kernel"}
    call = {"name": "benchmark_kernel", "id": "call_1", "type": "tool_call",
            "args": {"task_path": str(TASK), "code": CODE}}
    msg = tools["benchmark_kernel"].invoke(call)
    assert isinstance(msg, ToolMessage) and msg.artifact["speedup_vs_eager"] == 1.25
    assert json.loads(msg.content)["status"] == "accepted"
    with pytest.raises(ValueError, match="no such file"):
        tools["verify_kernel"].invoke({"task_path": "/nonexistent/task.py", "code": CODE})


def test_cpu_baselines_are_measured_in_each_process_gpu_ones_replayed(tmp_path, monkeypatch):
    """A CPU's eager time depends on the load of the moment: a stored one is never replayed into a new run
    (a stale one made a bogus 7.99x); a GPU host's is."""
    from htam_agent.evaluation.parent import evaluator

    measured: list[str] = []

    def fake_job(job, options):
        measured.append(job["backend"])
        return {"status": "accepted", "accepted": True, "flags": [], "timing": {"eager": {"median_ms": 1.0}}}

    monkeypatch.setattr(evaluator, "run_job", fake_job)
    store = VerdictStore(tmp_path / "verdicts")
    for backend in ("cpp", "cuda"):
        ev = Evaluator(EvalOptions(backend=backend, baselines=("eager",)), store=store, device="dev")
        cand = Candidate(task_path=str(TASK), source=CODE)
        store.put(ev.baseline_key(cand), {"schema": 1, "status": "accepted", "accepted": True,
                                          "timing": {"eager": {"median_ms": 9.0}}, "flags": []})
        first = ev.baseline(cand)
        assert ev.baseline(cand) is first  # once per Evaluator either way
        fresh = Evaluator(EvalOptions(backend=backend, baselines=("eager",)), store=store, device="dev")
        again = fresh.baseline(cand)
        if backend == "cpp":
            assert first["timing"]["eager"]["median_ms"] == 1.0 and again["timing"]["eager"]["median_ms"] == 1.0
        else:
            assert first["timing"]["eager"]["median_ms"] == 9.0 and again["timing"]["eager"]["median_ms"] == 9.0
    assert measured == ["cpp", "cpp"]
