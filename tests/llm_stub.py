"""A tiny OpenAI-compatible chat-completions server for honest LLM tests.

The server listens on 127.0.0.1 (random port) in a background thread and
answers ``POST /v1/chat/completions`` from a script: a queue of replies the
test sets up front. Every request body is recorded, so a test can check what
the client really sent (messages, tools, ...). litellm talks to it with
``model="openai/stub"``, ``api_base=server.url``, ``api_key="x"``.

Script items (dicts), consumed one per request:

- ``{"tool_calls": [{"name": str, "arguments": dict | str, "id": str?}, ...],
  "content": str?}`` — an assistant message with tool calls (a dict of
  arguments is JSON-encoded; a string is sent verbatim, so malformed JSON can
  be scripted);
- ``{"content": str}`` — a plain text reply;
- ``{"status": int, "message": str?, "code": str?}`` — an HTTP error with an
  OpenAI-style error body (429, 500, 401, 400 "context_length_exceeded", ...);
- ``{"body": dict | str, "status": int?}`` — this body sent verbatim (a dict
  as JSON, a string as is), status 200 unless given: malformed responses such
  as ``{"body": {"choices": []}}`` or ``{"body": "not json"}``;
- any item may carry ``"usage": {"prompt_tokens": int, "completion_tokens": int}``,
  ``"headers": {name: value}`` (e.g. ``{"Retry-After": "2"}``) and ``"delay":
  seconds`` (wait that long before answering: a client timeout).

When the script is empty the server answers 400 "llm stub: script exhausted",
which the client reports as a non-retried error, so a test that asks for more
replies than it scripted fails loudly.

Use it through the ``llm_server`` fixture: ``from llm_stub import llm_server``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class StubLLMServer:
    """The scripted server. Attributes: ``url`` ("http://127.0.0.1:PORT/v1"),
    ``requests`` (list of decoded JSON request bodies, oldest first)."""

    def __init__(self) -> None:
        self._queue: deque[dict[str, Any]] = deque()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    request = json.loads(body or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "request body is not JSON"}})
                    return
                status, payload, headers = server._answer(request)
                try:
                    self._send(status, payload, headers)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

            def _send(self, status: int, payload: dict[str, Any] | str,
                      headers: dict[str, str] | None = None) -> None:
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def script(self, items: list[dict[str, Any]]) -> None:
        """Append replies to the queue; each request consumes one item."""
        with self._lock:
            self._queue.extend(items)

    @property
    def remaining(self) -> int:
        """Number of scripted replies not yet consumed."""
        with self._lock:
            return len(self._queue)

    def close(self) -> None:
        """Stop the server and its thread."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _answer(self, request: dict[str, Any]) -> tuple[int, dict[str, Any] | str, dict[str, str]]:
        with self._lock:
            self.requests.append(request)
            item = self._queue.popleft() if self._queue else None
        if item is not None and item.get("delay"):
            time.sleep(float(item["delay"]))
        if item is None:
            return 400, {"error": {"message": "llm stub: script exhausted",
                                   "type": "invalid_request_error", "code": None}}, {}
        if "body" in item:
            return item.get("status", 200), item["body"], item.get("headers", {})
        if "status" in item:
            return item["status"], {"error": {
                "message": item.get("message", f"stub error {item['status']}"),
                "type": item.get("type", "stub_error"), "code": item.get("code")}}, \
                item.get("headers", {})
        message: dict[str, Any] = {"role": "assistant", "content": item.get("content")}
        finish = "stop"
        if item.get("tool_calls"):
            finish = "tool_calls"
            message["tool_calls"] = [
                {"id": call.get("id", f"call_stub{i}"), "type": "function",
                 "function": {"name": call["name"],
                              "arguments": call["arguments"] if isinstance(call["arguments"], str)
                              else json.dumps(call["arguments"])}}
                for i, call in enumerate(item["tool_calls"])]
        usage = {"prompt_tokens": 10, "completion_tokens": 5, **item.get("usage", {})}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return 200, {"id": f"chatcmpl-stub{len(self.requests)}", "object": "chat.completion",
                     "created": int(time.time()), "model": request.get("model", "stub"),
                     "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                     "usage": usage}, item.get("headers", {})


@pytest.fixture
def llm_server():
    """Yield a running :class:`StubLLMServer`; stopped after the test."""
    server = StubLLMServer()
    try:
        yield server
    finally:
        server.close()
