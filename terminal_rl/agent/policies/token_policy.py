"""Our own checkpoints served by vLLM, driven at the token level exactly as training renders them.

Calls an OpenAI-compatible ``/v1/completions`` endpoint with the prompt as token ids and asks for the
generated token ids back (``return_token_ids``), so nothing is ever re-tokenised.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import httpx

from terminal_rl.agent.policies.base import Policy, PolicyError, PolicySession, Reply
from terminal_rl.agent.tokens import ChatTokenizer, TokenConversation, load_tokenizer
from terminal_rl.tasks.model import Task


@dataclass(frozen=True)
class TokenPolicyConfig:
    base_url: str
    model: str
    # Tokenizer folder (with its chat template); the served model's own.
    tokenizer: str
    enable_thinking: bool
    temperature: float
    max_retries: int
    timeout_sec: float
    concurrency: int


class TokenPolicy(Policy):
    def __init__(self, config: TokenPolicyConfig):
        self.config = config
        self.name = f"token:{config.model}"
        self.chat = ChatTokenizer(load_tokenizer(config.tokenizer), config.enable_thinking)
        self._slots = asyncio.Semaphore(config.concurrency)

    def session(self, task: Task) -> PolicySession:
        return _TokenSession(self)

    async def generate(self, prompt_ids: list[int], max_tokens: int) -> list[int]:
        config = self.config
        request = {"model": config.model, "prompt": prompt_ids, "max_tokens": max_tokens,
                   "temperature": config.temperature, "return_token_ids": True}
        last_error: Exception | None = None
        async with self._slots, httpx.AsyncClient(base_url=config.base_url, timeout=config.timeout_sec) as client:
            for attempt in range(config.max_retries + 1):
                try:
                    response = await client.post("/completions", json=request)
                    response.raise_for_status()
                    choice = response.json()["choices"][0]
                    if choice.get("token_ids") is None:
                        raise PolicyError(f"{config.base_url} returned no token ids (needs return_token_ids)")
                    return list(choice["token_ids"])
                except (httpx.HTTPError, KeyError, ValueError) as error:
                    last_error = error
                    await asyncio.sleep(min(2**attempt, 10))
        raise PolicyError(f"{config.base_url}: {type(last_error).__name__}: {last_error}")


class _TokenSession(PolicySession):
    def __init__(self, policy: TokenPolicy):
        self._policy = policy
        self._conversation: TokenConversation | None = None
        self._seen = 0

    async def reply(self, messages: list[dict[str, str]], max_tokens: int) -> Reply:
        chat = self._policy.chat
        if self._conversation is None:
            self._conversation = TokenConversation.start(chat, messages)
        else:
            # messages[self._seen] is our own previous reply, already present as its tokens.
            self._conversation.add_observation(messages[self._seen + 1 :])
        self._seen = len(messages)
        started = time.monotonic()
        token_ids = await self._policy.generate(self._conversation.ids, max_tokens)
        self._conversation.add_model_turn(token_ids)
        return Reply(text=chat.decode(token_ids), latency_sec=time.monotonic() - started,
                     completion_tokens=len(token_ids), context_tokens=len(self._conversation.ids),
                     token_ids=token_ids)

    @property
    def conversation(self) -> TokenConversation | None:
        return self._conversation
