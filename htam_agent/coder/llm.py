"""The chat model behind the LLM coder: a factory for OpenAI-compatible endpoints, retries, usage counting.

`make_chat_model(ctx)` builds `langchain_openai.ChatOpenAI` for any OpenAI-compatible endpoint (OpenAI, vLLM,
SGLang, Ollama, ...) from the run's settings (model, base URL, the key's variable, temperature, max tokens,
timeout). Any other LangChain chat model can be used instead: the coder takes a `BaseChatModel`.

Retries are ours, not the SDK's: the factory sets `max_retries=0` on the client, and `invoke_with_retry`
retries transient failures (HTTP 429, 5xx, timeouts, connection errors) with exponential backoff through
tenacity, honouring a server's `Retry-After`. It works for any chat model, since it classifies errors by
their type names and HTTP status, not by one SDK's classes. Failures that retrying cannot fix (a bad key, an
unknown model, a wrong URL) and endpoints that stay down become `LLMConfigError` / `LLMUnavailable` with a
message that names the settings to fix.

`UsageCounter` is a LangChain callback handler that counts LLM calls, failed calls and tokens; pass it in a
run's `config["callbacks"]` to count everything the run asks.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from langchain_core.callbacks import BaseCallbackHandler

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.outputs import LLMResult

    from htam_agent.context import RunContext

OPENAI_BASE_URL = "https://api.openai.com/v1"
#: sent to keyless local endpoints (vLLM, Ollama, SGLang), which ignore it; the OpenAI SDK insists on a key
PLACEHOLDER_API_KEY = "no-key-needed"

MODEL_HINT = "set HTAM_MODEL or pass --model"
BASE_URL_HINT = "set HTAM_BASE_URL or pass --base-url"


class LLMError(RuntimeError):
    """The LLM could not answer. Subclasses say whether a setting is wrong or the endpoint is down."""


class LLMConfigError(LLMError):
    """A setting is missing or wrong (no model, no key, rejected key, unknown model, wrong URL)."""


class LLMUnavailable(LLMError):
    """The endpoint did not answer usefully, even after retries (unreachable, timeouts, 429/5xx)."""


# ------------------------------------------------------------------------------------------------------
# factory
# ------------------------------------------------------------------------------------------------------
def is_openai_host(base_url: str | None) -> bool:
    """True for OpenAI's own API (or no base URL, which means it)."""
    if not base_url:
        return True
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "api.openai.com" or host.endswith(".openai.com")


def resolve_api_key(ctx: RunContext, environ: dict[str, str] | None = None) -> str:
    """The API key from the variable named by `ctx.api_key_env`; a placeholder for keyless local endpoints.

    Raises LLMConfigError when the key is missing and the endpoint is OpenAI's (which always needs one).
    """
    import os

    env = os.environ if environ is None else environ
    var = ctx.api_key_env or "OPENAI_API_KEY"
    key = (env.get(var) or "").strip()
    if key:
        return key
    if ctx.base_url and not is_openai_host(ctx.base_url):
        return PLACEHOLDER_API_KEY
    where = ctx.base_url or OPENAI_BASE_URL
    raise LLMConfigError(
        f"no API key for {where}: the environment variable {var} is not set "
        f"(the key's variable is named by HTAM_API_KEY_ENV, default OPENAI_API_KEY). Set {var}, or point "
        f"HTAM_BASE_URL / --base-url at a local OpenAI-compatible server (vLLM, Ollama, ...) that needs no key."
    )


def make_chat_model(ctx: RunContext, **overrides: Any) -> BaseChatModel:
    """`ChatOpenAI` for the run's endpoint; `overrides` go to the constructor (e.g. `streaming=True`).

    The SDK's own retries are off (`max_retries=0`): `invoke_with_retry` does them, so they are counted,
    logged and testable. Raises LLMConfigError for a missing model or key.
    """
    if not ctx.model:
        raise LLMConfigError(f"no model configured: {MODEL_HINT} (e.g. gpt-4.1, or the name your vLLM "
                             f"or Ollama server serves)")
    api_key = resolve_api_key(ctx)
    from langchain_openai import ChatOpenAI

    kwargs: dict[str, Any] = {
        "model": ctx.model,
        # explicit, so no environment variable (OPENAI_API_BASE, a gateway) silently redirects the run
        "base_url": ctx.base_url or OPENAI_BASE_URL,
        "api_key": api_key,
        "temperature": ctx.temperature,
        "timeout": ctx.llm_timeout_s,
        "max_retries": 0,
    }
    if ctx.max_tokens:
        kwargs["max_tokens"] = ctx.max_tokens
    kwargs.update(overrides)
    return ChatOpenAI(**kwargs)


def describe_model(model: Any) -> tuple[str, str | None]:
    """(model name, base URL or None) of any chat model, for messages and trace metadata."""
    name = (getattr(model, "model_name", None) or getattr(model, "model", None)
            or type(model).__name__)
    base = getattr(model, "openai_api_base", None) or getattr(model, "base_url", None)
    return str(name), (str(base) if base else None)


# ------------------------------------------------------------------------------------------------------
# retries
# ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LLMCallRetries:
    """How often and how long to retry one LLM call that failed for a transient reason (timeout, connection,
    429, 5xx): exponential backoff, initial_wait_s * multiplier**(n-1) (+ jitter) before retry n, at most
    max_wait_s; a server's Retry-After is honoured up to max_wait_s.

    Not LangGraph's `RetryPolicy`, which re-runs a whole node: retrying here keeps the node's other work (the
    prompt, the artifacts) and turns the last failure into an error naming the model, endpoint and setting."""

    retries: int = 4
    initial_wait_s: float = 1.0
    multiplier: float = 2.0
    max_wait_s: float = 30.0
    jitter_s: float = 0.5

    @classmethod
    def from_context(cls, ctx: RunContext | None, **overrides: Any) -> LLMCallRetries:
        values: dict[str, Any] = {}
        if ctx is not None:
            values["retries"] = ctx.llm_retries
            # optional setting; RunContext may grow it (HTAM_LLM_RETRY_WAIT)
            wait = getattr(ctx, "llm_retry_wait_s", None)
            if wait is not None:
                values["initial_wait_s"] = float(wait)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def wait_for(self, attempt: int, exc: BaseException | None = None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        wait = self.initial_wait_s * self.multiplier ** max(0, attempt - 1)
        if self.jitter_s > 0:
            wait += random.uniform(0, self.jitter_s)
        retry_after = _retry_after_s(exc) if exc is not None else None
        if retry_after is not None:
            wait = max(wait, retry_after)
        return max(0.0, min(wait, self.max_wait_s))


_TIMEOUT_NAMES = {"APITimeoutError", "Timeout", "TimeoutException", "ReadTimeout", "ConnectTimeout",
                  "WriteTimeout", "PoolTimeout", "TimeoutError", "ReadTimeoutError"}
_CONNECTION_NAMES = {"APIConnectionError", "ConnectError", "ConnectionError", "RemoteProtocolError",
                     "ConnectionResetError", "ConnectionRefusedError", "ConnectionAbortedError",
                     "BrokenPipeError", "ReadError", "NetworkError", "ProtocolError",
                     "ServerDisconnectedError", "IncompleteRead"}


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _status(exc: BaseException) -> int | None:
    for obj in (exc, getattr(exc, "response", None)):
        code = getattr(obj, "status_code", None)
        if isinstance(code, int):
            return code
    code = getattr(exc, "status", None)
    return code if isinstance(code, int) else None


def _retry_after_s(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    try:
        value = headers.get("retry-after-ms")
        if value is not None:
            return float(value) / 1000.0
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def error_kind(exc: BaseException) -> str:
    """'timeout', 'connection', 'rate_limit', 'server', 'auth', 'not_found', 'bad_request' or 'other'."""
    names = _names(exc)
    if names & _TIMEOUT_NAMES:
        return "timeout"
    status = _status(exc)
    if status == 429 or "RateLimitError" in names:
        return "rate_limit"
    if status is not None and status >= 500 or "InternalServerError" in names:
        return "server"
    if status in (401, 403) or names & {"AuthenticationError", "PermissionDeniedError"}:
        return "auth"
    if status == 404 or "NotFoundError" in names:
        return "not_found"
    if status is not None and 400 <= status < 500:
        return "bad_request"
    if names & _CONNECTION_NAMES:
        return "connection"
    return "other"


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: rate limits, server errors, timeouts, connection failures (HTTP 408/409 too)."""
    if error_kind(exc) in ("timeout", "connection", "rate_limit", "server"):
        return True
    return _status(exc) in (408, 409)


def _short(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def explain_failure(exc: BaseException, *, model: str, base_url: str | None, attempts: int,
                    timeout_s: float | None = None, api_key_env: str | None = None) -> LLMError:
    """An LLMError whose message says what failed and which setting to check."""
    where = base_url or OPENAI_BASE_URL
    kind = error_kind(exc)
    tries = f"after {attempts} attempt{'s' if attempts != 1 else ''}"
    key_var = api_key_env or "the API key variable (HTAM_API_KEY_ENV, default OPENAI_API_KEY)"
    if kind == "auth":
        return LLMConfigError(f"the LLM endpoint {where} rejected the API key ({_short(exc)}); check {key_var}, "
                              f"and HTAM_BASE_URL / --base-url if this is the wrong server")
    if kind == "not_found":
        return LLMConfigError(f"the LLM endpoint {where} has no model {model!r} or no chat-completions route "
                              f"({_short(exc)}); check HTAM_MODEL / --model, and HTAM_BASE_URL / --base-url "
                              f"(OpenAI-compatible servers usually end in /v1)")
    if kind == "bad_request":
        return LLMError(f"the LLM endpoint {where} refused the request for model {model!r} ({_short(exc)})")
    if kind == "timeout":
        limit = f" within {timeout_s:g} s" if timeout_s else ""
        return LLMUnavailable(f"the LLM endpoint {where} (model {model!r}) did not answer{limit}, {tries}; "
                              f"raise HTAM_LLM_TIMEOUT, check the server's load, or check HTAM_BASE_URL / "
                              f"--base-url ({_short(exc)})")
    if kind == "connection":
        return LLMUnavailable(f"cannot reach the LLM endpoint {where} (model {model!r}), {tries}: {_short(exc)}. "
                              f"Is the server running? Check HTAM_BASE_URL / --base-url and HTAM_MODEL / --model")
    if kind in ("rate_limit", "server"):
        what = "kept rate-limiting (HTTP 429)" if kind == "rate_limit" else "kept failing with server errors"
        return LLMUnavailable(f"the LLM endpoint {where} (model {model!r}) {what}, {tries}: {_short(exc)}; "
                              f"retry later or raise HTAM_LLM_RETRIES")
    return LLMError(f"the LLM call to {where} (model {model!r}) failed: {_short(exc)}")


def invoke_with_retry(model: BaseChatModel, messages: list[BaseMessage] | Any, *,
                      config: dict[str, Any] | None = None, policy: LLMCallRetries | None = None,
                      timeout_s: float | None = None, api_key_env: str | None = None,
                      on_retry: Any = None) -> Any:
    """`model.invoke(messages, config)` with tenacity retries on transient errors.

    Returns the AIMessage. Raises LLMConfigError / LLMUnavailable / LLMError (with the original exception
    chained) when it gives up. `on_retry(attempt, exc, wait_s)` is called before each wait.
    """
    from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

    policy = policy or LLMCallRetries()

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return policy.wait_for(state.attempt_number, exc)

    def before_sleep(state: RetryCallState) -> None:
        if on_retry is not None and state.outcome is not None:
            on_retry(state.attempt_number, state.outcome.exception(),
                     state.next_action.sleep if state.next_action else 0.0)

    retrying = Retrying(stop=stop_after_attempt(policy.retries + 1), wait=wait,
                        retry=retry_if_exception(is_transient), before_sleep=before_sleep, reraise=True)
    attempts = 0
    try:
        for attempt in retrying:
            with attempt:
                attempts = attempt.retry_state.attempt_number
                return model.invoke(messages, config=config)
    except Exception as exc:  # noqa: BLE001 - every failure becomes an LLMError naming the settings
        if isinstance(exc, LLMError):
            raise
        name, base = describe_model(model)
        raise explain_failure(exc, model=name, base_url=base, attempts=attempts, timeout_s=timeout_s,
                              api_key_env=api_key_env) from exc
    raise AssertionError("unreachable")  # pragma: no cover


# ------------------------------------------------------------------------------------------------------
# usage
# ------------------------------------------------------------------------------------------------------
@dataclass
class Usage:
    calls: int = 0            # LLM calls that returned
    failed_calls: int = 0     # LLM calls that raised (each retried attempt counts)
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.calls + other.calls, self.failed_calls + other.failed_calls,
                     self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)

    def __sub__(self, other: Usage) -> Usage:
        return Usage(self.calls - other.calls, self.failed_calls - other.failed_calls,
                     self.input_tokens - other.input_tokens, self.output_tokens - other.output_tokens)


def message_usage(message: Any) -> tuple[int, int]:
    """(input, output) tokens of one AIMessage from `usage_metadata` (0, 0 when the model reports none)."""
    meta = getattr(message, "usage_metadata", None) or {}
    return int(meta.get("input_tokens") or 0), int(meta.get("output_tokens") or 0)


class UsageCounter(BaseCallbackHandler):
    """Counts LLM calls and tokens of every chat-model run it is attached to (thread-safe).

    Tokens come from each generation's `AIMessage.usage_metadata`, else from the provider's
    `llm_output["token_usage"]`. Attach it through `config={"callbacks": [counter]}`.
    """

    raise_error = False
    run_inline = True

    def __init__(self) -> None:
        super().__init__()
        self.usage = Usage()
        self._lock = threading.Lock()

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        tokens_in = tokens_out = 0
        found = False
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                if message is not None and getattr(message, "usage_metadata", None):
                    i, o = message_usage(message)
                    tokens_in += i
                    tokens_out += o
                    found = True
        if not found:
            token_usage = (response.llm_output or {}).get("token_usage") or {}
            tokens_in = int(token_usage.get("prompt_tokens") or 0)
            tokens_out = int(token_usage.get("completion_tokens") or 0)
        with self._lock:
            self.usage.calls += 1
            self.usage.input_tokens += tokens_in
            self.usage.output_tokens += tokens_out

    def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
        with self._lock:
            self.usage.failed_calls += 1

    def snapshot(self) -> Usage:
        with self._lock:
            return Usage(self.usage.calls, self.usage.failed_calls, self.usage.input_tokens,
                         self.usage.output_tokens)

    def __repr__(self) -> str:
        return f"UsageCounter({self.snapshot()})"


__all__ = [
    "LLMCallRetries", "LLMConfigError", "LLMError", "LLMUnavailable", "OPENAI_BASE_URL", "PLACEHOLDER_API_KEY",
    "Usage", "UsageCounter", "describe_model", "error_kind", "explain_failure", "invoke_with_retry",
    "is_openai_host", "is_transient", "make_chat_model", "message_usage", "resolve_api_key",
]
