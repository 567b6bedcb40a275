"""A local OpenAI-compatible server with scripted replies, for tests (no paid API, no network).

Serves ``POST /v1/chat/completions`` (text), ``POST /v1/completions`` (token ids in and out) and
``GET /v1/models`` (readiness). Each request pops the next scripted reply, or, when ``replies`` is a
function, gets ``replies(request_body)``. A reply may be a ``Fault``: an HTTP error status, or a
delay longer than the client's timeout.

``/v1/completions`` speaks vLLM 0.24's schema, read from its wheel, through the same
``completion_response`` as our CPU server (``terminal_rl/models/serve/``, where the vLLM lines are
cited); errors are ``ErrorResponse`` ``{"error": {message, type, param, code}}`` with the HTTP status
``code`` (``engine/protocol.py`` l. 60-68).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from terminal_rl.models.serve import completion_response


@dataclass(frozen=True)
class Fault:
    status: int = 500
    delay_sec: float = 0.0


class FakeLLMServer:
    """``with FakeLLMServer(replies) as server: server.base_url`` -> http://127.0.0.1:PORT/v1."""

    def __init__(self, replies: list[Any] | Callable[[dict], Any], port: int = 0):
        self.replies = replies if callable(replies) else list(replies)
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                if self.path.rstrip("/").endswith("/v1/models"):
                    self._send(200, {"object": "list", "data": [{"id": "policy", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.requests.append({"path": self.path, **body})
                    if callable(server.replies):
                        reply = server.replies(body)
                    else:
                        reply = server.replies.pop(0) if server.replies else Fault(500)
                if isinstance(reply, Fault):
                    time.sleep(reply.delay_sec)
                    kind = "BadRequestError" if reply.status < 500 else "InternalServerError"
                    self._send(
                        reply.status,
                        {"error": {"message": "scripted fault", "type": kind, "param": None, "code": reply.status}},
                    )
                    return
                self._send(200, server._response(self.path, body, reply))

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    @staticmethod
    def _response(path: str, body: dict, reply: Any) -> dict:
        if path.endswith("/chat/completions"):
            usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            return {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "test"),
                "usage": usage,
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply}}],
            }
        return completion_response(body, list(reply), [-0.5] * len(reply))
