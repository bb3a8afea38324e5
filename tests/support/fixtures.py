"""Pytest fixtures over the scripted OpenAI server and the LangSmith recorder.

Use them from a conftest.py:

    from support.fixtures import *  # noqa: F401,F403

`openai_server`      a started ScriptedOpenAIServer with an empty script (`openai_server.push(...)`)
`llm_ctx`            a RunContext pointing at it (model "scripted-model", cuda backend, 2 extra asks,
                     2 retries, 5 s timeout); `llm_ctx.with_(...)` for variations
`fast_retry`         a LLMCallRetries with millisecond waits, for tests of retries
`scripted_coder`     factory: scripted_coder(*replies, backend=..., **ctx_overrides) -> LLMCoder talking
                     HTTP to `openai_server` through a real ChatOpenAI, with replies pushed
`langsmith_server`   a started LangSmithRecorder (uncompressed multipart)
`no_tracing`         (autouse where registered) LangSmith tracing off and no proxy for localhost
"""

from __future__ import annotations

import os

import pytest

from htam_agent.coder.llm import LLMCallRetries
from htam_agent.context import RunContext
from support.langsmith_server import LangSmithRecorder
from support.openai_server import ScriptedOpenAIServer

_TRACING_VARS = ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING", "LANGSMITH_TRACING_V2")


@pytest.fixture(autouse=True)
def no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests talk to localhost only: no LangSmith tracing, no gateway, no proxy for local addresses."""
    for var in (*_TRACING_VARS, "LANGSMITH_GATEWAY", "OPENAI_API_BASE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY", ""), "127.0.0.1", "localhost"]))
    monkeypatch.setenv("NO_PROXY", no_proxy)
    monkeypatch.setenv("no_proxy", no_proxy)


@pytest.fixture
def openai_server():
    server = ScriptedOpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def langsmith_server():
    server = LangSmithRecorder().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def llm_ctx(openai_server: ScriptedOpenAIServer) -> RunContext:
    return RunContext(model="scripted-model", base_url=openai_server.url, backend="cuda", max_asks=2,
                      llm_retries=2, llm_timeout_s=5.0, temperature=0.0)


@pytest.fixture
def fast_retry() -> LLMCallRetries:
    return LLMCallRetries(retries=2, initial_wait_s=0.01, multiplier=2.0, max_wait_s=0.5, jitter_s=0.0)


@pytest.fixture
def scripted_coder(openai_server: ScriptedOpenAIServer, llm_ctx: RunContext, fast_retry: LLMCallRetries):
    from htam_agent.coder.llm_coder import LLMCoder

    def make(*replies, retry: LLMCallRetries | None = None, **ctx_overrides) -> LLMCoder:
        openai_server.push(*replies)
        ctx = llm_ctx.with_(**ctx_overrides) if ctx_overrides else llm_ctx
        policy = retry or LLMCallRetries.from_context(ctx, initial_wait_s=0.01, max_wait_s=0.5, jitter_s=0.0)
        return LLMCoder.from_context(ctx, retry=policy)

    return make
