"""The run's heavy objects (memory, evaluator, coder), built once per process from the context's settings.

The context holds settings only; nodes call `memory_for(ctx)`, `gateway_for(ctx)` and `coder_for(ctx)` to get
live objects. Objects injected from Python (`RunContext.resources`, e.g. a chat model or an opened memory) win
over the ones built here. Built objects are cached by the settings they depend on, so every node of every step
reuses the same Chroma client and the same evaluator (whose baseline timings are cached per task).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from htam_agent.context import RunContext

if TYPE_CHECKING:
    from htam_agent.coder.base import Coder
    from htam_agent.evaluation.parent.evaluator import Evaluator
    from htam_agent.evaluation.parent.gateway import EvaluationGateway
    from htam_agent.memory.htam import HTAMemory


@dataclass
class Resources:
    """What a caller may inject from Python; anything left None is built from the settings."""

    chat_model: Any = None            # a LangChain BaseChatModel
    coder: Coder | None = None
    memory: HTAMemory | None = None
    evaluator: Evaluator | EvaluationGateway | None = None
    extra: dict[str, Any] = field(default_factory=dict)


_lock = threading.RLock()
_cache: dict[tuple, Any] = {}


def _cached(key: tuple, build: Any) -> Any:
    with _lock:
        if key not in _cache:
            _cache[key] = build()
        return _cache[key]


def _injected(ctx: RunContext) -> Resources:
    return ctx.resources if isinstance(ctx.resources, Resources) else Resources()


def memory_for(ctx: RunContext) -> HTAMemory | None:
    """The run's memory; None when the method runs without one (memory_mode none)."""
    if not ctx.uses_memory:
        return None
    inj = _injected(ctx).memory
    if inj is not None:
        return inj

    def build() -> HTAMemory:
        from htam_agent.memory.config import MemoryConfig
        from htam_agent.memory.htam import HTAMemory

        return HTAMemory(MemoryConfig.from_env(ctx.memory_dir, ctx.chroma_url, ctx.memory_namespace))

    return _cached(("memory", ctx.memory_dir, ctx.chroma_url, ctx.memory_namespace), build)


def gateway_for(ctx: RunContext) -> EvaluationGateway:
    """The run's one door to verdicts: local evaluation, or replay of stored verdicts where the backend's device
    is missing (`ctx.evaluation`). An injected Evaluator is wrapped; an injected gateway is used as it is."""
    from htam_agent.evaluation.parent.gateway import EvaluationGateway, resolve_mode

    inj = _injected(ctx).evaluator
    if isinstance(inj, EvaluationGateway):
        return inj
    mode = resolve_mode(ctx.evaluation, ctx.backend)
    if inj is not None:
        return EvaluationGateway(inj, mode)

    def build() -> EvaluationGateway:
        from htam_agent.evaluation.parent.evaluator import Evaluator
        from htam_agent.evaluation.parent.options import EvalOptions
        from htam_agent.evaluation.parent.store import VerdictStore

        opts = EvalOptions(backend=ctx.backend, size=ctx.size, baselines=tuple(ctx.baselines),
                           compile_timeout_s=ctx.compile_timeout_s, run_timeout_s=ctx.run_timeout_s,
                           device_index=ctx.device_index)
        return EvaluationGateway(Evaluator(opts, VerdictStore()), mode)

    key = ("gateway", mode, ctx.backend, ctx.size, tuple(ctx.baselines), ctx.compile_timeout_s,
           ctx.run_timeout_s, ctx.device_index)
    return _cached(key, build)


def coder_for(ctx: RunContext) -> Coder:
    inj = _injected(ctx)
    if inj.coder is not None:
        return inj.coder
    if ctx.coder_kind == "exemplar" and inj.chat_model is None:
        def build_exemplar() -> Coder:
            from htam_agent.coder.exemplar import ExemplarCoder

            return ExemplarCoder()

        return _cached(("coder", "exemplar"), build_exemplar)

    from htam_agent.coder.llm_coder import LLMCoder

    if inj.chat_model is not None:
        return LLMCoder(inj.chat_model, ctx)

    def build_llm() -> Coder:
        from htam_agent.coder.llm import make_chat_model

        return LLMCoder(make_chat_model(ctx), ctx)

    key = ("coder", "llm", ctx.model, ctx.base_url, ctx.api_key_env, ctx.temperature, ctx.max_tokens,
           ctx.llm_timeout_s, ctx.llm_retries, ctx.max_asks)
    return _cached(key, build_llm)


def clear_cache() -> None:
    """Close and forget built objects (tests; a long-lived process switching memory folders)."""
    with _lock:
        for key, obj in list(_cache.items()):
            if key[0] == "memory":
                try:
                    obj.close()
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass
        _cache.clear()
