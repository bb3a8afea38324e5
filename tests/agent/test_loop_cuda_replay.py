"""The same loop on the cuda backend, on a machine without a GPU, against verdicts made on the H200.

The scripted replies' candidates were evaluated in one batch on the GPU host (tests/agent/cuda_script/README.md);
here the agent runs with the real ChatOpenAI client against the scripted server and gets those verdicts from
the verdict store. Nothing is evaluated locally: every verdict the run sees must be one the H200 produced.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_agent.agent import run_optimization
from htam_agent.bundled_tasks import CANDIDATES_DIR
from htam_agent.context import RunContext
from htam_agent.evaluation.parent.store import VerdictStore

from .scripted_coder import softmax_task

REPO = Path(__file__).resolve().parents[2]
VERDICTS = REPO / "benchmarks" / "results" / "h200_scripted_cuda_verdicts.jsonl"
BROKEN = (REPO / "tests" / "agent" / "cuda_script" / "softmax_nvrtc_broken.py").read_text()
NVRTC = (CANDIDATES_DIR / "norm_softmax" / "cuda_nvrtc.py").read_text()
ONLINE = (CANDIDATES_DIR / "norm_softmax" / "cuda_online.py").read_text()
TRITON = (CANDIDATES_DIR / "norm_softmax" / "triton_online.py").read_text()


def _gpu_verdicts() -> dict[str, dict]:
    out = {}
    for line in VERDICTS.read_text().splitlines():
        v = json.loads(line)
        if v.get("kind") == "candidate":
            out[Path(v["candidate_path"]).name] = v
    return out


@pytest.mark.slow  # fast lane: ~18 s, a replayed cuda run
def test_cuda_loop_replays_h200_verdicts(agent_env: Path, openai_server, monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = _gpu_verdicts()
    store = VerdictStore(agent_env / "verdicts")
    assert store.import_jsonl(VERDICTS) >= 3
    monkeypatch.setenv("HTAM_DEVICE_NAME", gpu["cuda_online.py"]["device_name"])
    monkeypatch.setenv("SCRIPTED_KEY", "sk-local-test")

    def block(code: str) -> str:
        return "```python\n" + code + "```"  # byte-identical to the evaluated file

    openai_server.push("Let me think about the memory traffic first.", "Kernel:\n" + block(BROKEN),
                       "Fixed:\n" + block(NVRTC), "In Triton:\n" + block(TRITON), block(ONLINE))
    ctx = RunContext.from_env(backend="cuda", steps=2, max_repairs=1, model="scripted-model",
                              base_url=openai_server.url, api_key_env="SCRIPTED_KEY", llm_retries=0,
                              evaluation="replay")  # what `auto` picks without a GPU; forced so a GPU host replays too
    result = run_optimization(softmax_task(), ctx)

    assert openai_server.remaining == 0 and result.llm_calls == 5
    root = Path(result.artifact_dir)
    step0 = {p.parent.name: json.loads(p.read_text()) for p in root.glob("step_00/cand_*/verdict.json")}
    step1 = {p.parent.name: json.loads(p.read_text()) for p in root.glob("step_01/cand_*/verdict.json")}
    assert step0["cand_0_r0"]["status"] == gpu["softmax_nvrtc_broken.py"]["status"] != "accepted"
    for got, name in ((step0["cand_0_r1"], "cuda_nvrtc.py"), (step1["cand_0_r0"], "cuda_online.py")):
        want = gpu[name]
        assert got.get("cached") and got["key"] == want["key"]
        assert got["status"] == want["status"] and got["speedup_vs_eager"] == want["speedup_vs_eager"]
    assert result.correct and result.backend == "cuda"
    best = max(gpu[n]["speedup_vs_eager"] for n in ("cuda_nvrtc.py", "cuda_online.py") if gpu[n]["accepted"])
    assert result.best_speedup_vs_eager == best
    assert [s["repairs"] for s in result.steps] == [1, 0]
    assert "compile" in (root / "step_00" / "cand_0_r1" / "prompt.md").read_text().lower()
