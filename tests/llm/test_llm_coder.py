"""LLMCoder against a real ChatOpenAI talking HTTP to the scripted OpenAI-compatible server."""

from __future__ import annotations

import time

import pytest
from llm_samples import CUDA_NVRTC, TASK, TRITON, fenced, reply_with

from htam_agent.coder.base import Coder, CodeRequest, StrategyBrief
from htam_agent.coder.llm import LLMCallRetries, LLMConfigError, LLMUnavailable, make_chat_model
from htam_agent.coder.llm_coder import LLMCoder
from htam_agent.context import RunContext

STRATEGIES = (StrategyBrief("mem.vec16", "Vectorized 16-byte loads", sketch="float4 ..."),
              StrategyBrief("launch.grid_stride", "Grid-stride loop"))


def request(backend: str = "cuda", **kw) -> CodeRequest:
    base = dict(task_name="elementwise_leaky_relu", task_source=TASK, backend=backend, op_class="elementwise",
                direction="memory_access", direction_reason="memory-bound", strategies=STRATEGIES, step=1)
    base.update(kw)
    return CodeRequest(**base)


def test_good_reply_gives_the_code(scripted_coder, openai_server):
    coder = scripted_coder(reply_with(CUDA_NVRTC))
    assert isinstance(coder, Coder) and coder.uses_llm and coder.name == "scripted-model"
    proposal = coder.propose(request())
    assert proposal.code == CUDA_NVRTC
    assert proposal.error == "" and proposal.coder == "scripted-model" and proposal.uses_llm
    assert proposal.strategy_ids == ["mem.vec16", "launch.grid_stride"]
    assert proposal.llm_calls == 1
    # what went over the wire: our model name, temperature, and the rendered prompt
    (sent,) = openai_server.chat_requests
    assert sent.body["model"] == "scripted-model" and sent.body["temperature"] == 0.0
    assert [m["role"] for m in sent.messages] == ["system", "user"]
    assert "def get_inputs():" in sent.messages[1]["content"]
    assert sent.messages[1]["content"] in proposal.prompt
    assert "stream" not in sent.body or sent.body["stream"] is False
    assert CUDA_NVRTC.strip() in proposal.reply


def test_several_blocks_pick_the_candidate(scripted_coder):
    reply = fenced("pip install triton", "bash") + "\n" + fenced(TRITON) + "\n" + fenced("y = ModelNew()(x)")
    proposal = scripted_coder(reply).propose(request("triton"))
    assert proposal.code == TRITON and proposal.llm_calls == 1


def test_reply_without_code_asks_again_in_the_same_conversation(scripted_coder, openai_server):
    prose = "I would vectorize the loads with float4 and use a grid-stride loop."
    proposal = scripted_coder(prose, reply_with(CUDA_NVRTC)).propose(request())
    assert proposal.code == CUDA_NVRTC and proposal.error == ""
    assert proposal.llm_calls == 2
    first, second = openai_server.chat_requests
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user"]
    assert second.messages[:2] == first.messages                  # same conversation
    assert second.messages[2]["content"] == prose                 # the model's own answer
    assert "could not be used: the reply contains no code" in second.messages[3]["content"]
    assert "### asked again" in proposal.reply and prose in proposal.reply


def test_wrong_backend_asks_again(scripted_coder, openai_server):
    proposal = scripted_coder(reply_with(TRITON), reply_with(CUDA_NVRTC)).propose(request("cuda"))
    assert proposal.code == CUDA_NVRTC and proposal.llm_calls == 2
    correction = openai_server.chat_requests[1].messages[-1]["content"]
    assert "wrong backend: the code is a triton candidate" in correction and "cuda" in correction


def test_gives_up_after_max_asks_with_a_clear_error(scripted_coder, openai_server):
    coder = scripted_coder("no code", "still no code", "nothing", "never used", max_asks=2)
    proposal = coder.propose(request())
    assert proposal.code is None
    assert proposal.llm_calls == 3 and len(openai_server.chat_requests) == 3
    assert openai_server.remaining == 1
    assert proposal.error.startswith("no usable code after 3 replies (2 extra asks): ")
    assert "no code" in proposal.error


def test_zero_extra_asks(openai_server):
    coder = LLMCoder(make_chat_model(RunContext(model="m", base_url=openai_server.url)), max_asks=0,
                     retry=LLMCallRetries(retries=0))
    openai_server.push("prose again")
    proposal = coder.propose(request())
    assert proposal.code is None and proposal.llm_calls == 1
    assert len(openai_server.chat_requests) == 1
    assert proposal.error.startswith("no usable code after 1 reply (0 extra asks)")


def test_429_then_500_then_success_is_retried_with_backoff(openai_server, llm_ctx):
    openai_server.push({"status": 429}, {"status": 500}, reply_with(CUDA_NVRTC))
    policy = LLMCallRetries(retries=3, initial_wait_s=0.1, multiplier=2.0, max_wait_s=1.0, jitter_s=0.0)
    coder = LLMCoder.from_context(llm_ctx, retry=policy)
    proposal = coder.propose(request())
    assert proposal.code == CUDA_NVRTC
    times = [r.time for r in openai_server.chat_requests]
    assert [r.status for r in openai_server.chat_requests] == [429, 500, 200]
    assert times[1] - times[0] >= 0.1 - 0.01          # first wait: initial
    assert times[2] - times[1] >= 0.2 - 0.01          # second wait: doubled
    assert proposal.llm_calls == 1                    # one successful call ...
    assert coder.usage.failed_calls == 2              # ... after two failed attempts, counted


def test_retry_after_header_is_honoured(openai_server, llm_ctx):
    openai_server.push({"status": 429, "retry_after": 0.3}, reply_with(CUDA_NVRTC))
    policy = LLMCallRetries(retries=1, initial_wait_s=0.01, max_wait_s=2.0, jitter_s=0.0)
    LLMCoder.from_context(llm_ctx, retry=policy).propose(request())
    first, second = openai_server.chat_requests
    assert second.time - first.time >= 0.29


def test_persistent_server_errors_give_up_with_llm_unavailable(openai_server, llm_ctx, fast_retry):
    openai_server.push({"status": 503}, {"status": 503}, {"status": 503}, "never reached")
    coder = LLMCoder.from_context(llm_ctx.with_(llm_retries=2), retry=fast_retry)
    with pytest.raises(LLMUnavailable, match=r"kept failing with server errors, after 3 attempts") as info:
        coder.propose(request())
    assert "HTAM_LLM_RETRIES" in str(info.value)
    assert len(openai_server.chat_requests) == 3 and openai_server.remaining == 1
    assert coder.usage.failed_calls == 3 and coder.usage.calls == 0


def test_a_hang_longer_than_the_timeout_is_retried(openai_server, llm_ctx, fast_retry):
    openai_server.push({"content": "late", "hang_s": 5}, reply_with(CUDA_NVRTC))
    coder = LLMCoder.from_context(llm_ctx.with_(llm_timeout_s=0.4), retry=fast_retry)
    start = time.monotonic()
    proposal = coder.propose(request())
    assert proposal.code == CUDA_NVRTC
    assert time.monotonic() - start < 4                 # did not wait for the hang to end
    assert len(openai_server.chat_requests) == 2 and coder.usage.failed_calls == 1


def test_hangs_past_every_retry_give_a_clear_timeout_error(openai_server, llm_ctx, fast_retry):
    openai_server.push({"hang_s": 5}, {"hang_s": 5})
    coder = LLMCoder.from_context(llm_ctx.with_(llm_timeout_s=0.3, llm_retries=1),
                                  retry=LLMCallRetries(retries=1, initial_wait_s=0.01, jitter_s=0.0))
    with pytest.raises(LLMUnavailable) as info:
        coder.propose(request())
    message = str(info.value)
    assert "did not answer within 0.3 s, after 2 attempts" in message and "HTAM_LLM_TIMEOUT" in message
    assert openai_server.url in message


def test_missing_api_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("HTAM_TEST_KEY", raising=False)
    ctx = RunContext(model="gpt-4.1", api_key_env="HTAM_TEST_KEY")
    with pytest.raises(LLMConfigError) as info:
        make_chat_model(ctx)
    message = str(info.value)
    assert "HTAM_TEST_KEY is not set" in message and "HTAM_BASE_URL" in message and "--base-url" in message
    with pytest.raises(LLMConfigError, match="HTAM_TEST_KEY"):
        LLMCoder.from_context(ctx.with_(base_url="https://api.openai.com/v1"))


def test_local_endpoint_works_without_a_key(openai_server, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    ctx = RunContext(model="llama3", base_url=openai_server.url, api_key_env="NO_SUCH_KEY_VAR")
    openai_server.push(reply_with(CUDA_NVRTC))
    proposal = LLMCoder.from_context(ctx, retry=LLMCallRetries(retries=0)).propose(request())
    assert proposal.code == CUDA_NVRTC
    assert openai_server.chat_requests[0].headers["authorization"] == "Bearer no-key-needed"


def test_the_key_is_read_from_the_named_variable(monkeypatch):
    from support.openai_server import ScriptedOpenAIServer

    monkeypatch.setenv("MY_LLM_KEY", "sk-right")
    with ScriptedOpenAIServer([reply_with(CUDA_NVRTC)], api_key="sk-right") as server:
        ctx = RunContext(model="m", base_url=server.url, api_key_env="MY_LLM_KEY")
        assert LLMCoder.from_context(ctx, retry=LLMCallRetries(retries=0)).propose(request()).code == CUDA_NVRTC
    monkeypatch.setenv("MY_LLM_KEY", "sk-wrong")
    with ScriptedOpenAIServer([reply_with(CUDA_NVRTC)], api_key="sk-right") as server:
        ctx = RunContext(model="m", base_url=server.url, api_key_env="MY_LLM_KEY")
        with pytest.raises(LLMConfigError, match="rejected the API key.*MY_LLM_KEY"):
            LLMCoder.from_context(ctx, retry=LLMCallRetries(retries=3, initial_wait_s=0.01)).propose(request())
        assert len(server.chat_requests) == 1  # a rejected key is not retried


def test_missing_model_is_a_config_error():
    with pytest.raises(LLMConfigError, match="HTAM_MODEL.*--model"):
        make_chat_model(RunContext(base_url="http://127.0.0.1:1/v1"))


def test_unreachable_endpoint_names_the_base_url_setting():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = RunContext(model="m", base_url=f"http://127.0.0.1:{port}/v1", llm_retries=1)
    coder = LLMCoder.from_context(ctx, retry=LLMCallRetries.from_context(ctx, initial_wait_s=0.01, jitter_s=0.0))
    with pytest.raises(LLMUnavailable) as info:
        coder.propose(request())
    message = str(info.value)
    assert f"cannot reach the LLM endpoint http://127.0.0.1:{port}/v1" in message
    assert "after 2 attempts" in message and "HTAM_BASE_URL" in message and "--base-url" in message
    assert coder.usage.failed_calls == 2


def test_wrong_path_is_a_config_error(openai_server):
    ctx = RunContext(model="m", base_url=openai_server.url.removesuffix("/v1") + "/api")
    with pytest.raises(LLMConfigError, match="no model 'm' or no chat-completions route.*HTAM_BASE_URL"):
        LLMCoder.from_context(ctx, retry=LLMCallRetries(retries=2, initial_wait_s=0.01)).propose(request())
    assert len(openai_server.requests) == 1


def test_tokens_and_calls_are_counted(scripted_coder, openai_server):
    coder = scripted_coder("no code here", reply_with(CUDA_NVRTC), reply_with(TRITON))
    first = coder.propose(request("cuda"))
    second = coder.propose(request("triton"))
    sent_in, sent_out = openai_server.reported_usage()
    assert first.llm_calls == 2 and second.llm_calls == 1
    assert first.input_tokens + second.input_tokens == sent_in > 0
    assert first.output_tokens + second.output_tokens == sent_out > 0
    per_call = [r.usage for r in openai_server.chat_requests]
    assert first.input_tokens == per_call[0]["prompt_tokens"] + per_call[1]["prompt_tokens"]
    assert second.output_tokens == per_call[2]["completion_tokens"]
    assert (coder.usage.calls, coder.usage.input_tokens, coder.usage.output_tokens) == (3, sent_in, sent_out)


def test_streaming_model_counts_usage_too(openai_server, llm_ctx):
    openai_server.push(reply_with(CUDA_NVRTC))
    model = make_chat_model(llm_ctx, streaming=True, stream_usage=True)
    proposal = LLMCoder(model, llm_ctx, retry=LLMCallRetries(retries=0)).propose(request())
    (sent,) = openai_server.chat_requests
    assert sent.body["stream"] is True and sent.body["stream_options"] == {"include_usage": True}
    assert proposal.code == CUDA_NVRTC
    assert (proposal.input_tokens, proposal.output_tokens) == (sent.usage["prompt_tokens"],
                                                               sent.usage["completion_tokens"])


def test_run_config_carries_name_tags_and_metadata(openai_server, llm_ctx):
    from langchain_core.tracers.base import BaseTracer

    class Recorder(BaseTracer):
        def __init__(self):
            super().__init__()
            self.runs = []

        def _persist_run(self, run):
            pass

        def _on_llm_end(self, run):
            self.runs.append(run)

    recorder = Recorder()
    openai_server.push("prose", reply_with(CUDA_NVRTC))
    coder = LLMCoder.from_context(llm_ctx.with_(tags=("nightly",)), retry=LLMCallRetries(retries=0),
                                  callbacks=[recorder])
    coder.propose(request(step=4, repair=0))
    assert [r.name for r in recorder.runs] == ["generate", "generate"]
    run = recorder.runs[1]
    assert sorted(run.tags) == ["cuda", "htam", "nightly"]
    meta = run.extra["metadata"]
    assert {k: meta[k] for k in ("task", "backend", "step", "direction", "model", "ask")} == {
        "task": "elementwise_leaky_relu", "backend": "cuda", "step": 4, "direction": "memory_access",
        "model": "scripted-model", "ask": 1}
    openai_server.push(reply_with(CUDA_NVRTC))
    coder.propose(request(repair=1, failed_code=CUDA_NVRTC, feedback="incorrect"))
    assert recorder.runs[-1].name == "repair"


def test_inside_a_parent_runnable_the_calls_are_its_children(openai_server, llm_ctx):
    """Called from a LangGraph node (any runnable), the LLM runs nest under it and keep its callbacks."""
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tracers.base import BaseTracer

    class Recorder(BaseTracer):
        def __init__(self):
            super().__init__()
            self.finished = []

        def _persist_run(self, run):
            pass

        def _end_trace(self, run):
            self.finished.append(run)
            super()._end_trace(run)

    recorder = Recorder()
    openai_server.push(reply_with(CUDA_NVRTC))
    coder = LLMCoder.from_context(llm_ctx, retry=LLMCallRetries(retries=0))
    node = RunnableLambda(lambda req: coder.propose(req).code, name="generate_node")
    code = node.invoke(request(), config={"callbacks": [recorder], "tags": ["graph"],
                                          "metadata": {"thread_id": "t1"}})
    assert code == CUDA_NVRTC
    parent = next(r for r in recorder.finished if r.name == "generate_node")
    (child,) = [r for r in recorder.finished if r.run_type == "llm"]
    assert child.parent_run_id == parent.id and child.trace_id == parent.trace_id
    assert child.name == "generate" and {"htam", "cuda", "graph"} <= set(child.tags)
    assert child.extra["metadata"]["thread_id"] == "t1" and child.extra["metadata"]["task"] == "elementwise_leaky_relu"
