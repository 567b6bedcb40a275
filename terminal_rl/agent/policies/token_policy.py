"""Our own checkpoints served by vLLM, driven at the token level exactly as training renders them.

Calls vLLM's OpenAI-compatible ``/v1/completions`` with the prompt as token ids and asks for the
generated ids back (``return_token_ids``), so nothing is ever re-tokenised. The request and response
follow vLLM 0.24's own schema (``vllm/entrypoints/openai/completion/protocol.py``):
``CompletionRequest.prompt`` accepts a flat list of token ids (l. 49-55), ``return_token_ids`` (l. 145)
fills ``CompletionResponseChoice.token_ids`` with the generated ids, end-of-turn token included
(l. 504; ``completion/serving.py`` l. 567-569), and ``logprobs=1`` fills
``choices[0].logprobs.token_logprobs`` 1:1 with those ids (``serving.py`` l. 628). Errors are
``{"error": {"message", "type", "param", "code"}}`` with the HTTP status ``code``
(``engine/protocol.py`` l. 60-68): a 4xx (context too long, bad ids) is final, never retried.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx

from terminal_rl.agent.policies.base import Policy, PolicyError, PolicySession
from terminal_rl.agent.policies.token_session import Generation, TokenSession
from terminal_rl.agent.tokens import ChatTokenizer, SequenceLimits, load_tokenizer
from terminal_rl.tasks.model import Task


@dataclass(frozen=True)
class TokenPolicyConfig:
    base_url: str
    model: str
    # Tokenizer folder (with its chat template); the served model's own.
    tokenizer: str
    enable_thinking: bool
    temperature: float
    # Sent explicitly: vLLM otherwise takes them from the model's generation_config.json.
    top_p: float
    top_k: int
    max_retries: int
    timeout_sec: float
    concurrency: int


class TokenPolicy(Policy):
    def __init__(self, config: TokenPolicyConfig, history: str = "append", limits: SequenceLimits = SequenceLimits()):
        self.config = config
        self.history = history
        self.limits = limits
        self.name = f"token:{config.model}"
        self.chat = ChatTokenizer(load_tokenizer(config.tokenizer), config.enable_thinking)
        self._slots = asyncio.Semaphore(config.concurrency)

    def session(self, task: Task) -> PolicySession:
        return TokenSession(self.chat, self.history, self.generate, self.limits)

    async def generate(self, prompt_ids: list[int], max_tokens: int) -> Generation:
        config = self.config
        request = {
            "model": config.model,
            "prompt": prompt_ids,
            "max_tokens": max_tokens,
            "temperature": config.temperature,
            "top_p": config.top_p,
            "top_k": config.top_k,
            "logprobs": 1,
            "return_token_ids": True,
        }
        last_error = ""
        async with self._slots, httpx.AsyncClient(base_url=config.base_url, timeout=config.timeout_sec) as client:
            for attempt in range(config.max_retries + 1):
                try:
                    response = await client.post("/completions", json=request)
                except httpx.HTTPError as error:
                    last_error = f"{type(error).__name__}: {error}"
                else:
                    if response.status_code == 200:
                        return _generation(response.json(), config.base_url)
                    last_error = f"HTTP {response.status_code}: {_error_message(response)}"
                    if response.status_code < 500:
                        break
                await asyncio.sleep(min(2**attempt, 10))
        raise PolicyError(f"{config.base_url}: {last_error}")


def _generation(body: dict, base_url: str) -> Generation:
    """``CompletionResponse`` -> the generated ids and their log-probs."""
    choice = body["choices"][0]
    if choice.get("token_ids") is None:
        raise PolicyError(f"{base_url} returned no token ids (a vLLM server that knows return_token_ids is needed)")
    logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
    if logprobs is not None and (len(logprobs) != len(choice["token_ids"]) or None in logprobs):
        logprobs = None
    return Generation(list(choice["token_ids"]), logprobs)


def _error_message(response: httpx.Response) -> str:
    try:
        error = response.json()["error"]
        return f"{error.get('type', '')}: {error['message']}" + (
            f" (param {error['param']})" if error.get("param") else ""
        )
    except (ValueError, KeyError, TypeError):
        return response.text[:300]
