"""`htam bench` driven by an LLM: the real ChatOpenAI client over HTTP against the scripted local server (no
LLM endpoint is reachable from CI), the real agent and evaluator on the cpp backend. The records and the
report must carry the calls and tokens the server counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.fixtures import no_tracing, openai_server  # noqa: F401 - fixtures
from typer.testing import CliRunner

from htam_agent.bundled_tasks import CANDIDATES_DIR
from htam_agent.cli.bench import app
from htam_agent.run import resources

pytestmark = pytest.mark.slow
GOOD = (CANDIDATES_DIR / "norm_softmax" / "cpp_omp.py").read_text()


def test_bench_with_an_llm_over_http(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, build_root: str,
                                     openai_server) -> None:  # noqa: F811
    for var, value in {"HTAM_BUILD_DIR": build_root, "HTAM_VERDICT_DIR": str(tmp_path / "verdicts"),
                       "HTAM_MEMORY_DIR": str(tmp_path / "user-memory"), "HTAM_API_KEY_ENV": "SCRIPTED_KEY",
                       "SCRIPTED_KEY": "sk-local-test", "HTAM_LLM_TIMEOUT": "30"}.items():
        monkeypatch.setenv(var, value)
    for var in ("HTAM_MODEL", "HTAM_BASE_URL", "HTAM_CODER", "HTAM_BACKEND", "HTAM_STEPS"):
        monkeypatch.delenv(var, raising=False)
    resources.clear_cache()
    # prose first (the coder asks again), then the same good kernel for every later request
    openai_server.push("Softmax is memory-bound; fuse the passes.", *[f"```python\n{GOOD}\n```"] * 8)
    out = tmp_path / "b"
    res = CliRunner().invoke(app, ["bundled", "--methods", "htam,one-shot", "--budget", "2", "--backend", "cpp",
                                   "--size", "small", "--baselines", "eager", "--model", "scripted-model",
                                   "--base-url", openai_server.url, "--filter", "norm_softmax", "--workers", "1",
                                   "--out", str(out)])
    resources.clear_cache()
    assert res.exit_code == 0, res.output
    recs = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["method"] for r in recs) == ["htam", "one-shot"]
    for r in recs:
        assert r["status"] == "done" and r["correct"], r.get("error")
        assert r["coder"] == "scripted-model" and r["result"]["uses_llm"] is True
        assert r["llm_calls"] >= 1 and r["input_tokens"] > 0 and r["output_tokens"] > 0
    one_shot = next(r for r in recs if r["method"] == "one-shot")
    assert one_shot["evaluations"] == 1
    # every request the server answered is in exactly one record, with the tokens the server reported
    assert sum(r["llm_calls"] for r in recs) == len(openai_server.chat_requests)
    assert (sum(r["input_tokens"] for r in recs), sum(r["output_tokens"] for r in recs)) == \
        openai_server.reported_usage()
    md = (out / "report" / "report.md").read_text()
    cost = next(line for line in md.splitlines() if line.startswith("| one-shot |") and " / 1 |" in line)
    cells = [c.strip() for c in cost.strip("|").split("|")]  # method, budget, evaluations, calls, tokens, ...
    assert cells[3] == f"{one_shot['llm_calls']:.2f}", cost
    assert cells[4] == f"{one_shot['input_tokens'] + one_shot['output_tokens']:,}", cost
