"""A scripted OpenAI-compatible HTTP server for tests and demos (standard library only).

It replays a script of replies to `POST /v1/chat/completions`, one script item per request, in order:

    with ScriptedOpenAIServer(["```python\\nclass ModelNew: ...\\n```"]) as server:
        ChatOpenAI(model="m", base_url=server.url, api_key="k").invoke("hi")
        server.chat_requests[0].messages

A script item is a string (the reply's content) or a dict:
    {"content": "...",            # reply text (default "")
     "status": 429,               # answer with this HTTP error instead (429, 500, 503, 401, 404, ...)
     "retry_after": 0.05,         # Retry-After header (seconds) on an error
     "hang_s": 2.0,               # wait this long before answering (for client timeouts)
     "finish_reason": "length",   # default "stop"
     "usage": {"prompt_tokens": 10, "completion_tokens": 5},   # default: counted from the text
     "tool_calls": [{"name": "optimize", "args": {"task": "t.py"}}]}   # the reply calls these tools
Streaming (`"stream": true` in the request) is answered with server-sent events, with a final usage chunk
when the request asks for `stream_options.include_usage`.

When the script runs out, the server answers HTTP 500 "script exhausted" (a test fails loudly) unless a
`default` reply is set. Every request is recorded (`server.requests`: path, body, headers, time, and the
usage the server reported), for assertions.

Standalone, for manual demos:
    python tests/support/openai_server.py --script replies.json --port 8011
    HTAM_MODEL=scripted HTAM_BASE_URL=http://127.0.0.1:8011/v1 htam ...
where replies.json is a JSON list of script items (or {"replies": [...], "default": ...}).
"""

from __future__ import annotations

import argparse
import json
import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_PATH = "/v1/chat/completions"
_ERROR_TYPES = {
    400: ("invalid_request_error", "Bad request"),
    401: ("invalid_request_error", "Incorrect API key provided"),
    403: ("permission_error", "Forbidden"),
    404: ("invalid_request_error", "The model does not exist"),
    408: ("timeout", "Request timed out"),
    429: ("rate_limit_error", "Rate limit reached, please retry"),
    500: ("server_error", "The server had an error while processing your request"),
    502: ("server_error", "Bad gateway"),
    503: ("server_error", "The engine is currently overloaded"),
}


def count_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: about four characters per token, at least one."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def prompt_tokens(body: dict[str, Any]) -> int:
    """Prompt tokens of a chat request: its messages' text plus 4 tokens of framing per message."""
    messages = body.get("messages") or []
    return sum(count_tokens(_message_text(m)) + 4 for m in messages)


@dataclass
class ScriptItem:
    content: str = ""
    status: int = 200
    retry_after: float | None = None
    hang_s: float = 0.0
    finish_reason: str = "stop"
    usage: dict[str, int] | None = None
    error_message: str | None = None
    tool_calls: list[dict[str, Any]] | None = None  # [{"name": ..., "args": {...}}]; finish_reason tool_calls

    def tool_call_payload(self) -> list[dict[str, Any]]:
        """The OpenAI `tool_calls` list of this reply (ids are stable per position)."""
        return [{"id": f"call_{i}_{tc['name']}", "type": "function",
                 "function": {"name": tc["name"], "arguments": json.dumps(tc.get("args", {}))}}
                for i, tc in enumerate(self.tool_calls or [])]

    @classmethod
    def of(cls, item: Any) -> ScriptItem:
        if isinstance(item, ScriptItem):
            return item
        if isinstance(item, str):
            return cls(content=item)
        if isinstance(item, dict):
            known = {k: v for k, v in item.items() if k in cls.__dataclass_fields__}
            unknown = set(item) - set(known)
            if unknown:
                raise ValueError(f"unknown script keys {sorted(unknown)}")
            return cls(**known)
        raise TypeError(f"a script item is a string or a dict, not {type(item).__name__}")


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    time: float
    status: int = 0                                   # what the server answered
    usage: dict[str, int] | None = None               # the usage it reported (successful replies)
    reply: str = ""                                   # the content it sent
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])


class ScriptedOpenAIServer:
    """The server; `start()`/`stop()` or use it as a context manager. `url` ends in /v1."""

    def __init__(self, script: list[Any] | None = None, *, host: str = "127.0.0.1", port: int = 0,
                 default: Any = None, model: str = "scripted-model", api_key: str | None = None) -> None:
        self._script: list[ScriptItem] = [ScriptItem.of(i) for i in (script or [])]
        self.default = ScriptItem.of(default) if default is not None else None
        self.model = model
        self.api_key = api_key  # when set, other keys get HTTP 401
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ---- control --------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self._httpd.server_address[0]}:{self.port}/v1"

    def start(self) -> ScriptedOpenAIServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="scripted-openai",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases hanging handlers
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def push(self, *items: Any) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(ScriptItem.of(i) for i in items)

    @property
    def remaining(self) -> int:
        """Script items not yet used."""
        with self._lock:
            return len(self._script)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded POST /v1/chat/completions requests, in order."""
        with self._lock:
            return [r for r in self.requests if r.path.split("?")[0].rstrip("/") == CHAT_PATH]

    def reported_usage(self) -> tuple[int, int]:
        """(prompt, completion) tokens summed over the successful replies the server sent."""
        with self._lock:
            done = [r.usage for r in self.requests if r.usage]
        return (sum(u["prompt_tokens"] for u in done), sum(u["completion_tokens"] for u in done))

    def _next_item(self) -> ScriptItem:
        with self._lock:
            if self._script:
                return self._script.pop(0)
        if self.default is not None:
            return self.default
        return ScriptItem(status=500, error_message="scripted server: script exhausted (no reply left)")

    # ---- HTTP -----------------------------------------------------------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _send_json(self, status: int, payload: dict[str, Any],
                           headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                if self.path.split("?")[0].rstrip("/") == "/v1/models":
                    self._send_json(200, {"object": "list", "data": [
                        {"id": server.model, "object": "model", "created": 0, "owned_by": "tests"}]})
                else:
                    self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {"_raw": raw.decode(errors="replace")}
                record = RecordedRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()},
                                         body, time.monotonic())
                with server._lock:
                    server.requests.append(record)
                if self.path.split("?")[0].rstrip("/") != CHAT_PATH:
                    record.status = 404
                    self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                try:
                    self._chat(body, record)
                except (BrokenPipeError, ConnectionResetError):
                    record.extra["client_gone"] = True  # the client timed out and left

            def _chat(self, body: dict[str, Any], record: RecordedRequest) -> None:
                if server.api_key is not None:
                    auth = self.headers.get("Authorization", "")
                    if auth != f"Bearer {server.api_key}":
                        record.status = 401
                        self._send_json(401, {"error": {"message": "Incorrect API key provided",
                                                        "type": "invalid_request_error",
                                                        "code": "invalid_api_key"}})
                        return
                item = server._next_item()
                if item.hang_s > 0 and server._stopping.wait(item.hang_s):
                    return
                if item.status != 200:
                    kind, message = _ERROR_TYPES.get(item.status, ("server_error", "error"))
                    headers = {}
                    if item.retry_after is not None:
                        headers["Retry-After"] = f"{item.retry_after:g}"
                    record.status = item.status
                    self._send_json(item.status, {"error": {"message": item.error_message or message,
                                                            "type": kind, "param": None, "code": None}},
                                    headers)
                    return
                usage = dict(item.usage or {})
                usage.setdefault("prompt_tokens", prompt_tokens(body))
                usage.setdefault("completion_tokens", count_tokens(item.content))
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                record.status, record.reply = 200, item.content
                model = body.get("model") or server.model
                cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
                created = int(time.time())
                if body.get("stream"):
                    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    record.usage = usage if include_usage else None
                    self._stream(cid, created, model, item, usage if include_usage else None)
                    return
                record.usage = usage
                self._send_json(200, {
                    "id": cid, "object": "chat.completion", "created": created, "model": model,
                    "system_fingerprint": "fp_scripted",
                    "choices": [{"index": 0, "logprobs": None,
                                 "finish_reason": "tool_calls" if item.tool_calls else item.finish_reason,
                                 "message": {"role": "assistant", "content": item.content,
                                             **({"tool_calls": item.tool_call_payload()} if item.tool_calls
                                                else {})}}],
                    "usage": usage,
                })

            def _stream(self, cid: str, created: int, model: str, item: ScriptItem,
                        usage: dict[str, int] | None) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True

                def event(choices: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> None:
                    chunk = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                             "system_fingerprint": "fp_scripted", "choices": choices, **(extra or {})}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()

                event([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
                text = item.content
                for start in range(0, len(text), 16):
                    event([{"index": 0, "delta": {"content": text[start:start + 16]}, "finish_reason": None}])
                for i, tc in enumerate(item.tool_call_payload()):
                    event([{"index": 0, "delta": {"tool_calls": [{"index": i, **tc}]}, "finish_reason": None}])
                event([{"index": 0, "delta": {},
                        "finish_reason": "tool_calls" if item.tool_calls else item.finish_reason}])
                if usage is not None:
                    event([], {"usage": usage})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A scripted OpenAI-compatible chat-completions server.")
    parser.add_argument("--script", help="JSON file: a list of script items, or {replies: [...], default: ...}")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--default", help="reply text once the script is used up (default: HTTP 500)")
    parser.add_argument("--model", default="scripted-model")
    args = parser.parse_args(argv)
    script: list[Any] = []
    default: Any = args.default
    if args.script:
        with open(args.script, encoding="utf-8") as fh:
            data = json.load(fh)
        if isinstance(data, dict):
            script, default = data.get("replies", []), data.get("default", default)
        else:
            script = data
    server = ScriptedOpenAIServer(script, host=args.host, port=args.port, default=default, model=args.model)
    server.start()
    print(f"scripted OpenAI server at {server.url} ({len(script)} scripted replies); Ctrl-C stops it",
          flush=True)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
