"""A chat model that must answer with one JSON object, given one correction request (the task
generator's stages; the judge's prompts go through the judge service, ``terminal_rl/judge/service.py``,
with the same reader and correction round); the object is read by ``model_json.py``.

Calls go through our litellm policy (any litellm model string, key from the named environment
variable); each call's tokens and cost are added to the caller's usage tally.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from terminal_rl.agent.policies.litellm_policy import LiteLLMConfig, LiteLLMPolicy
from terminal_rl.agent.policies.model_json import MalformedReply

T = TypeVar("T")


CORRECTION = (
    "Your reply could not be used: {error}. Reply again with only the JSON object the instructions "
    "ask for, with exactly those keys."
)


class JsonChat:
    def __init__(self, config: LiteLLMConfig, max_tokens: int):
        self._policy = LiteLLMPolicy(config)
        self._max_tokens = max_tokens

    async def ask(
        self, messages: list[dict[str, str]], parse: Callable[[str], T], usage: dict[str, float]
    ) -> tuple[T, list[dict[str, str]]]:
        """``parse(reply)`` and the conversation including the reply that gave it; ``parse`` raises
        MalformedReply for an unusable reply, which gets one correction request.

        Raises:
            MalformedReply: the reply and the one after the correction request were both unusable.
            PolicyError: the model endpoint failed after its retries.
        """
        conversation = list(messages)
        try:
            return parse(await self._reply(conversation, usage)), conversation
        except MalformedReply as error:
            conversation.append({"role": "user", "content": CORRECTION.format(error=error)})
        try:
            return parse(await self._reply(conversation, usage)), conversation
        except MalformedReply as error:
            raise MalformedReply(f"{error} (also after a correction request)") from None

    async def _reply(self, conversation: list[dict[str, str]], usage: dict[str, float]) -> str:
        """The model's next reply, appended to ``conversation``; its tokens and cost added to ``usage``."""
        reply = await self._policy.complete(conversation, self._max_tokens)
        usage["requests"] += 1
        usage["completion_tokens"] += reply.completion_tokens or 0
        usage["prompt_tokens"] += max((reply.context_tokens or 0) - (reply.completion_tokens or 0), 0)
        usage["cost_usd"] += reply.cost_usd
        conversation.append({"role": "assistant", "content": reply.text})
        return reply.text
