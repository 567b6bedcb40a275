"""A chat model that must answer with one JSON object, given one correction request (the task
generator's stages, the step scorer of the PRM dataset).

Calls go through our litellm policy (any litellm model string, key from the named environment
variable); each call's tokens and cost are added to the caller's usage tally.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from terminal_rl.agent.policies.litellm_policy import LiteLLMConfig, LiteLLMPolicy

T = TypeVar("T")
_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)\n```", re.DOTALL)


class MalformedReply(ValueError):
    """The reply is not the JSON object asked for; the message says what is wrong."""


def reply_object(text: str) -> dict[str, Any]:
    """The JSON object in ``text``: the whole reply, or its first fenced block."""
    fenced = _FENCE.search(text)
    candidate = fenced.group(1) if fenced else text.strip()
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError as error:
        raise MalformedReply(
            f"the reply is not JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    if not isinstance(value, dict):
        raise MalformedReply(f"the reply must be one JSON object, got {type(value).__name__}")
    return value


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
