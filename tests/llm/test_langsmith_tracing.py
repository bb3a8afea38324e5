"""LangSmith tracing: one LLMCoder call, traced through the real langsmith client to a local recorder.

The call runs in a fresh process, because langsmith reads its settings (LANGSMITH_TRACING, ...) once per
process. The process talks HTTP to the scripted OpenAI server and to the recorder, both in this process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from llm_samples import CUDA_NVRTC, reply_with
from support.langsmith_server import LangSmithRecorder
from support.procs import child_env

PROBE = Path(__file__).resolve().parents[1] / "support" / "trace_probe.py"


def run_probe(openai_url: str, langsmith_url: str, backend: str = "cuda") -> dict:
    env = child_env({k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_"))})
    env.update(LANGSMITH_TRACING="true", LANGSMITH_ENDPOINT=langsmith_url, LANGSMITH_API_KEY="lsv2-dummy-test-key",
               LANGSMITH_PROJECT="htam-tests", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    done = subprocess.run([sys.executable, str(PROBE), openai_url, backend], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("zstd", [False, True], ids=["multipart", "zstd-multipart"])
def test_llm_call_is_traced_with_name_tags_and_metadata(openai_server, zstd):
    openai_server.push("no code in this one", reply_with(CUDA_NVRTC))
    with LangSmithRecorder(zstd=zstd) as recorder:
        result = run_probe(openai_server.url, recorder.url)
        runs = recorder.wait_for_runs(lambda rs: len([r for r in rs if r.get("name") == "generate"
                                                      and r.get("end_time")]) >= 2, timeout_s=15)
        requests = list(recorder.requests)
    assert result["code"] == CUDA_NVRTC and result["llm_calls"] == 2
    assert not recorder.errors, recorder.errors
    ingest = [r for r in requests if r.path.endswith("/runs/multipart")]
    assert ingest, [(r.method, r.path) for r in requests]
    encodings = [r.encoding for r in ingest]
    if zstd:  # runs queued before the client has read /info may still go uncompressed
        assert "zstd" in encodings, encodings
    else:
        assert set(encodings) == {""}, encodings
    generate = sorted((r for r in runs if r.get("name") == "generate"),
                      key=lambda r: r["extra"]["metadata"]["ask"])
    assert len(generate) == 2, (requests, runs)
    for ask, run in enumerate(generate):
        assert run["run_type"] == "llm"
        assert sorted(run["tags"]) == ["cuda", "htam", "probe"]  # the client may reorder them
        meta = run["extra"]["metadata"]
        assert meta["task"] == "elementwise_leaky_relu" and meta["backend"] == "cuda"
        assert meta["step"] == 3 and meta["direction"] == "memory_access" and meta["model"] == "scripted-model"
        assert meta["ask"] == ask and meta["strategies"] == ["vec16"]
        assert run.get("end_time") and not run.get("error")
    # the second call's outputs are the reply with the candidate, its inputs the whole conversation
    assert "leaky_relu_f32" in json.dumps(generate[1]["outputs"])
    assert "could not be used" in json.dumps(generate[1]["inputs"])
