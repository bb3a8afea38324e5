"""A local stand-in for the LangSmith ingestion API, recording the runs a traced program sends.

Endpoints (what the langsmith 0.15 client uses for tracing):
  GET  /info               server info: batch-ingest config, and `zstd_compression_enabled` when
                           constructed with zstd=True (then the client sends zstd-compressed multipart)
  POST /runs/multipart     multipart/form-data, parts named `post.<id>`, `patch.<id>`, `post.<id>.inputs`,
                           `.outputs`, `.extra`, `.events`, `.error`, `.serialized`, `attachment.<id>.<name>`;
                           the body may be `Content-Encoding: zstd` or `gzip`
  POST /runs/batch         JSON {"post": [...], "patch": [...]} (the fallback when multipart is off)
  POST /runs               one run as JSON;  PATCH /runs/<id>  its update
Anything else is recorded and answered 200 `{}` (GET: 404), so an unexpected call shows in `requests`.

Runs are merged by id: `server.runs[id]` holds name, run_type, tags, trace_id, parent_run_id, inputs, outputs,
extra (with `metadata`), error... `server.wait_for_runs(lambda runs: ...)` polls until a condition holds.

    with LangSmithRecorder() as ls:
        env LANGSMITH_TRACING=true LANGSMITH_ENDPOINT={ls.url} LANGSMITH_API_KEY=dummy ...
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email import message_from_bytes
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_RUN_KEYS = ("inputs", "outputs", "events", "extra", "error", "serialized")


@dataclass
class IngestRequest:
    method: str
    path: str
    encoding: str          # "", "zstd", "gzip"
    content_type: str
    size: int
    parts: list[str]       # multipart part names (empty for JSON bodies)


def decode_body(raw: bytes, encoding: str) -> bytes:
    encoding = (encoding or "").lower().strip()
    if encoding in ("", "identity"):
        return raw
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "zstd":
        import zstandard

        # frames written by a streaming compressor carry no content size: decompress as a stream
        return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    raise ValueError(f"unsupported Content-Encoding {encoding!r}")


def parse_multipart(body: bytes, content_type: str) -> list[tuple[str, str, bytes]]:
    """(part name, part content type, payload) of a multipart/form-data body."""
    message = message_from_bytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body, policy=HTTP)
    if not message.is_multipart():
        raise ValueError("not a multipart body")
    parts = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition") or ""
        payload = part.get_payload(decode=True) or b""
        parts.append((str(name), part.get_content_type(), payload))
    return parts


class LangSmithRecorder:
    """The server; `start()`/`stop()` or a context manager. `url` is what LANGSMITH_ENDPOINT takes."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, zstd: bool = False,
                 multipart: bool = True) -> None:
        self.zstd = zstd
        self.multipart = multipart
        self.runs: dict[str, dict[str, Any]] = {}
        self.requests: list[IngestRequest] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> LangSmithRecorder:
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="langsmith-recorder",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LangSmithRecorder:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---- queries ---------------------------------------------------------------------------------------
    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(run) for run in self.runs.values()]

    def runs_named(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.snapshot() if r.get("name") == name]

    def wait_for_runs(self, condition: Callable[[list[dict[str, Any]]], bool],
                      timeout_s: float = 10.0) -> list[dict[str, Any]]:
        """Poll until `condition(runs)` is true; returns the runs (the last snapshot on timeout)."""
        deadline = time.monotonic() + timeout_s
        while True:
            runs = self.snapshot()
            if condition(runs) or time.monotonic() > deadline:
                return runs
            time.sleep(0.05)

    # ---- ingestion ---------------------------------------------------------------------------------------
    def _merge(self, run_id: str, fields: dict[str, Any]) -> None:
        with self._lock:
            run = self.runs.setdefault(run_id, {"id": run_id})
            for key, value in fields.items():
                if key == "extra" and isinstance(value, dict) and isinstance(run.get("extra"), dict):
                    merged = dict(run["extra"])
                    for k, v in value.items():
                        if k == "metadata" and isinstance(v, dict) and isinstance(merged.get(k), dict):
                            merged[k] = {**merged[k], **v}
                        else:
                            merged[k] = v
                    run["extra"] = merged
                else:
                    run[key] = value

    def _ingest_run(self, run: dict[str, Any]) -> None:
        run_id = str(run.get("id"))
        self._merge(run_id, run)

    def ingest_multipart(self, body: bytes, content_type: str) -> list[str]:
        names = []
        for name, _ctype, payload in parse_multipart(body, content_type):
            names.append(name)
            pieces = name.split(".")
            if pieces[0] in ("post", "patch") and len(pieces) == 2:
                self._merge(pieces[1], json.loads(payload or b"{}"))
            elif pieces[0] in ("post", "patch") and len(pieces) == 3 and pieces[2] in _RUN_KEYS:
                self._merge(pieces[1], {pieces[2]: json.loads(payload or b"null")})
            elif pieces[0] == "attachment" and len(pieces) >= 3:
                with self._lock:
                    run = self.runs.setdefault(pieces[1], {"id": pieces[1]})
                    run.setdefault("attachments", {})[".".join(pieces[2:])] = payload
            # feedback.<id> and unknown parts are listed in requests only
        return names

    def info(self) -> dict[str, Any]:
        return {
            "version": "0.0.0-htam-test",
            "batch_ingest_config": {"use_multipart_endpoint": self.multipart, "scale_up_qsize_trigger": 1000,
                                    "scale_up_nthreads_limit": 4, "scale_down_nempty_trigger": 4,
                                    "size_limit": 100, "size_limit_bytes": 20_971_520},
            "instance_flags": {"zstd_compression_enabled": self.zstd},
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _reply(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().strip().split(b";")[0], 16)
                        if size == 0:
                            self.rfile.readline()
                            break
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    return b"".join(chunks)
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _record(self, method: str, raw: bytes, parts: list[str]) -> None:
                with server._lock:
                    server.requests.append(IngestRequest(
                        method, self.path, self.headers.get("Content-Encoding") or "",
                        self.headers.get("Content-Type") or "", len(raw), parts))

            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?")[0].rstrip("/")
                self._record("GET", b"", [])
                if path.endswith("/info"):
                    self._reply(200, server.info())
                else:
                    self._reply(404, {"detail": "not found"})

            def do_POST(self) -> None:  # noqa: N802
                raw = self._body()
                path = self.path.split("?")[0].rstrip("/")
                parts: list[str] = []
                try:
                    body = decode_body(raw, self.headers.get("Content-Encoding") or "")
                    if path.endswith("/runs/multipart"):
                        parts = server.ingest_multipart(body, self.headers.get("Content-Type") or "")
                    elif path.endswith("/runs/batch"):
                        data = json.loads(body or b"{}")
                        for run in [*(data.get("post") or []), *(data.get("patch") or [])]:
                            server._ingest_run(run)
                    elif path.endswith("/runs"):
                        server._ingest_run(json.loads(body or b"{}"))
                except Exception as exc:  # noqa: BLE001 - recorded for the test to show
                    with server._lock:
                        server.errors.append(f"{self.path}: {type(exc).__name__}: {exc}")
                    self._record("POST", raw, parts)
                    self._reply(400, {"detail": str(exc)})
                    return
                self._record("POST", raw, parts)
                self._reply(202 if "/runs" in path else 200, {})

            def do_PATCH(self) -> None:  # noqa: N802
                raw = self._body()
                path = self.path.split("?")[0].rstrip("/")
                self._record("PATCH", raw, [])
                if "/runs/" in path:
                    run = json.loads(decode_body(raw, self.headers.get("Content-Encoding") or "") or b"{}")
                    server._merge(path.rsplit("/", 1)[1], run)
                self._reply(200, {})

        return Handler


__all__ = ["IngestRequest", "LangSmithRecorder", "decode_body", "parse_multipart"]
