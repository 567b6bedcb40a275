"""A token-level policy session: the history (``terminal_rl.agent.tokens``) renders each turn's prompt
ids, a generator answers with the model's token ids, and nothing is ever re-tokenised.

One class serves every token-level driver: the evaluation's ``policy=token`` (a vLLM server over
HTTP) and verl's agent loop (verl's rollout servers), so both send the model the same tokens.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from terminal_rl.agent.policies.base import PolicyError, PolicySession, Reply
from terminal_rl.agent.tokens import ChatTokenizer, SequenceLimits, TokenHistory, make_history


@dataclass(frozen=True)
class Generation:
    """One model turn: its token ids, their log-probs when the server gave them, and the first and
    last weights versions that wrote them when the server reports them (verl's global steps: a reply
    resumed across a weights update in async training has two)."""

    token_ids: list[int]
    log_probs: list[float] | None = None
    versions: tuple[int, int] | None = None


# (prompt ids, max new tokens) -> the model's turn
Generate = Callable[[list[int], int], Awaitable[Generation]]


class TokenSession(PolicySession):
    def __init__(
        self, chat: ChatTokenizer, history: str, generate: Generate, limits: SequenceLimits = SequenceLimits()
    ):
        self.chat = chat
        self.history_kind = history
        self.history: TokenHistory | None = None
        self._generate = generate
        self._limits = limits

    async def reply(self, messages: list[dict[str, str]], max_tokens: int) -> Reply:
        if self.history is None:
            self.history = make_history(self.history_kind, self.chat, messages)
        else:  # our own previous reply is in the history as its tokens; a context policy may rewrite
            self.history.show(messages)
        room = self.history.turn_room(self._limits)  # raises ContextExhausted
        max_tokens = max_tokens if room is None else min(max_tokens, room)
        prompt = self.history.prompt_ids()
        started = time.monotonic()
        try:
            generation = await self._generate(prompt, max_tokens)
        except PolicyError:
            raise
        except Exception as error:  # whatever the model server raised: the policy failed, not the agent
            raise PolicyError(f"{type(error).__name__}: {error}") from error
        self.history.add_model_turn(generation.token_ids, generation.log_probs, generation.versions)
        return Reply(
            text=self.chat.decode(generation.token_ids),
            latency_sec=time.monotonic() - started,
            completion_tokens=len(generation.token_ids),
            context_tokens=self.history.context_tokens,
            token_ids=list(generation.token_ids),
        )
