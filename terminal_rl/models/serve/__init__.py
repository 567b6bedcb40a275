"""A token-level completions server for a Hugging Face model folder on CPU (``serve=hf``), for
evaluating small models where vLLM cannot run (no GPU). It speaks the part of vLLM's OpenAI server
that ``policy=token`` uses, so evaluation code and tests see one schema.

    python -m terminal_rl.models.serve model_dir=FOLDER port=8000 [served_model_name=policy]

``POST /v1/completions`` takes the prompt as token ids and answers vLLM 0.24's non-streaming
``CompletionResponse`` (read from its wheel, ``vllm/entrypoints/openai/completion/protocol.py``):
choices of ``CompletionResponseChoice`` (l. 491-516) whose ``token_ids`` / ``prompt_token_ids`` are
set only when the request asks ``return_token_ids`` (``completion/serving.py`` l. 564-569),
``logprobs`` as ``CompletionLogProbs`` (l. 484-488), one entry per generated id, when the request asks
``logprobs``, and ``usage`` counted from the ids (``serving.py`` l. 574-582). ``GET /v1/models``
answers readiness. Requests are served one at a time (one model, two cores).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def completion_response(body: dict, token_ids: list[int], logprobs: list[float], model: str | None = None) -> dict:
    """vLLM's ``CompletionResponse`` for a token-id prompt, the generated ``token_ids`` and their
    log-probs."""
    prompt, wants_ids = list(body["prompt"]), bool(body.get("return_token_ids"))
    entries = None
    if body.get("logprobs") is not None:
        values = list(logprobs)
        tokens = [f"token_id:{t}" for t in token_ids]
        entries = {
            "text_offset": [sum(len(t) for t in tokens[:i]) for i in range(len(tokens))],
            "token_logprobs": values,
            "tokens": tokens,
            "top_logprobs": [{token: value} for token, value in zip(tokens, values)],
        }
    finish = "length" if len(token_ids) >= int(body.get("max_tokens") or 16) else "stop"
    choice = {
        "index": 0,
        "text": "",
        "logprobs": entries,
        "finish_reason": finish,
        "stop_reason": None,
        "token_ids": token_ids if wants_ids else None,
        "prompt_logprobs": None,
        "prompt_token_ids": prompt if wants_ids else None,
        "routed_experts": None,
    }
    return {
        "id": f"cmpl-{time.monotonic_ns()}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": model or body.get("model", "policy"),
        "choices": [choice],
        "service_tier": None,
        "system_fingerprint": None,
        "kv_transfer_params": None,
        "usage": {
            "prompt_tokens": len(prompt),
            "total_tokens": len(prompt) + len(token_ids),
            "completion_tokens": len(token_ids),
            "prompt_tokens_details": None,
        },
    }


class Generator:
    """The model folder's ``generate``: greedy at temperature 0, else sampled (temperature, top-p,
    top-k as vLLM takes them), stopping at the end-of-turn token. Log-probs are of the model's raw
    distribution, before temperature and truncation, as vLLM returns them by default
    (``logprobs_mode=raw_logprobs``)."""

    def __init__(self, folder: str):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).eval()
        self.eos_id = AutoTokenizer.from_pretrained(folder).eos_token_id

    def __call__(self, prompt: list[int], body: dict) -> tuple[list[int], list[float]]:
        torch = self.torch
        temperature = float(body.get("temperature", 1.0))
        sampling = (
            {"do_sample": False}
            if temperature == 0
            else {
                "do_sample": True,
                "temperature": temperature,
                "top_p": float(body.get("top_p", 1.0)),
                "top_k": int(body.get("top_k", -1)) if int(body.get("top_k", -1)) > 0 else 0,
            }
        )
        if body.get("seed") is not None:
            torch.manual_seed(int(body["seed"]))
        with torch.no_grad():
            out = self.model.generate(
                torch.tensor([prompt]),
                attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                max_new_tokens=int(body.get("max_tokens") or 16),
                eos_token_id=self.eos_id,
                pad_token_id=self.eos_id,
                output_logits=True,
                return_dict_in_generate=True,
                **sampling,
            )
        ids = out.sequences[0, len(prompt) :].tolist()
        logprobs = [float(torch.log_softmax(logits[0].float(), -1)[token]) for logits, token in zip(out.logits, ids)]
        return ids, logprobs


def serve(generate, port: int, model_name: str) -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1:``port`` answering with ``generate(prompt_ids, body)``."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path.rstrip("/").endswith("/v1/models"):
                self._send(200, {"object": "list", "data": [{"id": model_name, "object": "model"}]})
            else:
                self._send(404, _error(f"no route {self.path}", 404))

        def do_POST(self):
            if not self.path.rstrip("/").endswith("/v1/completions"):
                self._send(404, _error(f"no route {self.path}", 404))
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt = body.get("prompt")
            if not isinstance(prompt, list) or not all(isinstance(t, int) for t in prompt):
                self._send(400, _error("prompt must be a list of token ids", 400))
                return
            with lock:
                ids, logprobs = generate(prompt, body)
            self._send(200, completion_response(body, ids, logprobs, model_name))

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def _error(message: str, code: int) -> dict:
    """vLLM's ``ErrorResponse`` (``engine/protocol.py`` l. 60-68)."""
    return {
        "error": {
            "message": message,
            "type": "BadRequestError" if code < 500 else "InternalServerError",
            "param": None,
            "code": code,
        }
    }
