"""A local OpenAI-compatible server with scripted replies, for tests (no paid API, no network).

Serves ``POST /v1/chat/completions`` (text), ``POST /v1/completions`` (token ids in and out) and
``GET /v1/models`` (readiness). Each request pops the next scripted reply, or, when ``replies`` is a
function, gets ``replies(request_body)``. A reply may be a ``Fault``: an HTTP error status, or a
delay longer than the client's timeout.

``/v1/completions`` speaks vLLM 0.24's schema, read from its wheel
(``vllm/entrypoints/openai/completion/protocol.py``): ``CompletionResponse`` (l. 519-532) with
``CompletionResponseChoice`` (l. 491-516) whose ``token_ids`` / ``prompt_token_ids`` are set only
when the request asks ``return_token_ids`` (``completion/serving.py`` l. 564-569), ``logprobs`` as
``CompletionLogProbs`` (l. 484-488) one entry per generated id when the request asks ``logprobs``,
``usage`` counted from the ids (``serving.py`` l. 574-582); errors are ``ErrorResponse``
``{"error": {message, type, param, code}}`` with the HTTP status ``code`` (``engine/protocol.py``
l. 60-68).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Callable
from typing import Any


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
                    self._send(reply.status, {"error": {"message": "scripted fault", "type": kind, "param": None,
                                                        "code": reply.status}})
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
            return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "test"), "usage": usage,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply}}]}
        return completion_response(body, list(reply))


def completion_response(body: dict, token_ids: list[int]) -> dict:
    """vLLM's non-streaming ``CompletionResponse`` for a token-id prompt (see the module docstring)."""
    prompt, wants_ids = list(body["prompt"]), bool(body.get("return_token_ids"))
    logprobs = None
    if body.get("logprobs") is not None:
        values = [-0.5] * len(token_ids)
        tokens = [f"token_id:{t}" for t in token_ids]
        logprobs = {"text_offset": [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))],
                    "token_logprobs": values, "tokens": tokens,
                    "top_logprobs": [{token: value} for token, value in zip(tokens, values)]}
    finish = "length" if len(token_ids) >= int(body.get("max_tokens") or 16) else "stop"
    choice = {"index": 0, "text": "", "logprobs": logprobs, "finish_reason": finish, "stop_reason": None,
              "token_ids": token_ids if wants_ids else None, "prompt_logprobs": None,
              "prompt_token_ids": prompt if wants_ids else None, "routed_experts": None}
    return {"id": "cmpl-test", "object": "text_completion", "created": int(time.time()),
            "model": body.get("model", "test"), "choices": [choice], "service_tier": None,
            "system_fingerprint": None, "kv_transfer_params": None,
            "usage": {"prompt_tokens": len(prompt), "total_tokens": len(prompt) + len(token_ids),
                      "completion_tokens": len(token_ids), "prompt_tokens_details": None}}
