"""The LLM coder: render the request, ask the chat model, extract the candidate, ask again when unusable.

    coder = LLMCoder.from_context(ctx)             # ChatOpenAI for ctx.model / ctx.base_url
    coder = LLMCoder(any_chat_model, ctx)          # any LangChain BaseChatModel
    proposal = coder.propose(request)

The proposal reports what the reply declares it applied (its `APPLIED:` line, parsed leniently: direction and
strategy ids), so the memory learns what was done rather than what was asked; without a declaration the
requested strategies stand. One `propose` is one conversation: the system and user prompts, then, while the reply has no usable code
(no code block, no ModelNew, does not parse, wrong backend), a short corrective message in the same
conversation, at most `max_asks` times. Transient endpoint errors are retried with backoff
(`htam_agent.coder.llm.invoke_with_retry`); an endpoint that stays down or a wrong setting raises
`LLMUnavailable` / `LLMConfigError` (the run cannot make progress without its LLM). Every call carries a
run name ("generate" / "repair"), tags ("htam", the backend, the context's tags) and metadata (task,
backend, step, direction, model, ...) in its LangChain config, so LangSmith traces are searchable.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from htam_agent.coder.base import CodeProposal, CodeRequest
from htam_agent.coder.extract import Declaration, Extraction, extract_code, parse_declaration
from htam_agent.coder.llm import (
    LLMCallRetries,
    Usage,
    UsageCounter,
    describe_model,
    invoke_with_retry,
    make_chat_model,
)
from htam_agent.coder.prompting import render_ask_again, render_request
from htam_agent.memory.cards import plan_text

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from htam_agent.context import RunContext


def message_text(message: Any) -> str:
    """The text of a chat reply (string content, or the text parts of content blocks)."""
    text = getattr(message, "text", None)
    if isinstance(text, str):  # langchain-core 1.x: a str that is also callable (deprecated)
        return str(text)
    if callable(text):
        text = text()
        if isinstance(text, str):
            return text
    content = getattr(message, "content", message)
    return content if isinstance(content, str) else str(content)


class LLMCoder:
    """Coder backed by a LangChain chat model (implements `htam_agent.coder.base.Coder`)."""

    uses_llm = True

    def __init__(self, model: BaseChatModel, ctx: RunContext | None = None, *, name: str | None = None,
                 max_asks: int | None = None, retry: LLMCallRetries | None = None,
                 tags: tuple[str, ...] | list[str] | None = None, callbacks: list[Any] | None = None,
                 prompts_dir: str | Path | None = None, timeout_s: float | None = None,
                 api_key_env: str | None = None) -> None:
        self.model = model
        model_name, self.base_url = describe_model(model)
        self.name = name or (ctx.model if ctx is not None and ctx.model else model_name)
        self.max_asks = max_asks if max_asks is not None else (ctx.max_asks if ctx is not None else 2)
        if self.max_asks < 0:
            raise ValueError("max_asks must be 0 or more")
        self.retry = retry or LLMCallRetries.from_context(ctx)
        self.tags = tuple(tags if tags is not None else (ctx.tags if ctx is not None else ()))
        self.callbacks = list(callbacks or [])
        self.prompts_dir = prompts_dir
        self.timeout_s = timeout_s if timeout_s is not None else (ctx.llm_timeout_s if ctx is not None else None)
        self.api_key_env = api_key_env or (ctx.api_key_env if ctx is not None else None)
        #: everything this coder has asked, across proposals (calls, failed calls, tokens)
        self.usage = Usage()
        self._lock = threading.Lock()

    @classmethod
    def from_context(cls, ctx: RunContext, **kwargs: Any) -> LLMCoder:
        """A coder for the run's OpenAI-compatible endpoint (raises LLMConfigError for a missing model/key)."""
        return cls(make_chat_model(ctx), ctx, **kwargs)

    # --------------------------------------------------------------------------------------------------
    def config_for(self, request: CodeRequest, run_name: str, ask: int,
                   counter: UsageCounter) -> dict[str, Any]:
        """LangChain config of one call: run name, tags, metadata, callbacks.

        Merged into the config of the runnable we are called from (a LangGraph node), so the call is
        traced as that run's child and keeps its callbacks, tags and metadata.
        """
        from langchain_core.runnables.config import ensure_config, merge_configs

        tags = list(dict.fromkeys(["htam", request.backend, *self.tags]))
        metadata = {
            "task": request.task_name, "backend": request.backend, "step": request.step,
            "direction": request.direction, "model": self.name, "op_class": request.op_class,
            "repair": request.repair, "variant": request.variant, "ask": ask,
            "strategies": [s.id for s in request.strategies],
        }
        own = {"run_name": run_name, "tags": tags, "metadata": metadata, "callbacks": [counter, *self.callbacks]}
        return dict(merge_configs(ensure_config(), own))

    def propose(self, request: CodeRequest) -> CodeProposal:
        from langchain_core.messages import AIMessage, HumanMessage

        prompt = render_request(request, self.prompts_dir)
        messages = prompt.messages()
        run_name = prompt.kind  # "generate" or "repair"
        counter = UsageCounter()
        transcript: list[str] = []
        extraction: Extraction | None = None
        try:
            for ask in range(self.max_asks + 1):
                config = self.config_for(request, run_name, ask, counter)
                reply = invoke_with_retry(self.model, messages, config=config, policy=self.retry,
                                          timeout_s=self.timeout_s, api_key_env=self.api_key_env)
                text = message_text(reply)
                transcript.append(f"### reply {ask + 1}\n\n{text}")
                extraction = extract_code(text, request.backend)
                if extraction.ok:
                    break
                if ask == self.max_asks:
                    break
                correction = render_ask_again(extraction.reason, request.backend, self.prompts_dir)
                transcript.append(f"### asked again\n\n{correction}")
                messages = [*messages, AIMessage(content=text), HumanMessage(content=correction)]
        finally:
            used = counter.snapshot()
            with self._lock:
                self.usage = self.usage + used

        assert extraction is not None
        replies = [t.split("\n\n", 1)[-1] for t in transcript if t.startswith("### reply")]
        declaration = declared_in(replies, request)
        asks = len(replies)
        error = ""
        if not extraction.ok:
            error = (f"no usable code after {asks} repl{'y' if asks == 1 else 'ies'} "
                     f"({self.max_asks} extra ask{'s' if self.max_asks != 1 else ''}): {extraction.reason}")
        return CodeProposal(
            code=extraction.code,
            coder=self.name,
            uses_llm=True,
            prompt=prompt.text(),
            reply="\n\n".join(transcript),
            strategy_ids=(list(declaration.strategies) if declaration is not None
                          else [s.id for s in request.strategies]),
            direction=declaration.direction if declaration is not None else None,
            declared=declaration is not None,
            plan=plan_text(replies[-1]) if replies else "",
            error=error,
            llm_calls=used.calls,
            input_tokens=used.input_tokens,
            output_tokens=used.output_tokens,
        )


def declared_in(replies: list[str], request: CodeRequest) -> Declaration | None:
    """The declaration of the last reply that has one (the one with the code usually; an earlier reply's when a
    corrective ask got only code back). Known names: the catalog's directions, its strategies and the request's
    (learned cards included)."""
    from htam_agent.memory.catalog import load_catalog

    catalog = load_catalog()
    directions = {d.id: d.name for d in catalog.directions}
    strategies = {s.id: s.title for s in catalog.strategies} | {s.id: s.title for s in request.strategies}
    for reply in reversed(replies):
        found = parse_declaration(reply, directions, strategies)
        if found is not None:
            return found
    return None


__all__ = ["LLMCoder", "declared_in", "message_text"]
