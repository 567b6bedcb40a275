"""The policy boundary, kept thin: messages in, the model's reply out. One session per episode."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from terminal_rl.tasks.model import Task


class PolicyError(RuntimeError):
    """The model endpoint failed after its retries: infrastructure, not the agent's behaviour."""


class ContextExhausted(RuntimeError):
    """The next turn does not fit in the sequence budget: the episode ends as ``context_exhausted``.
    ``cost_usd``: what a reply the budget then refused had cost."""

    cost_usd: float = 0.0


@dataclass(frozen=True)
class Reply:
    text: str
    latency_sec: float = 0.0
    completion_tokens: int | None = None
    # Tokens in the context after this reply (prompt + every turn so far), when known.
    context_tokens: int | None = None
    # Token-level drivers: the model's own token ids for this turn (never re-tokenised).
    token_ids: list[int] | None = None
    cost_usd: float = 0.0
    # Tokens of the prompt this reply answered, when the server counted them.
    prompt_tokens: int | None = None


class PolicySession(ABC):
    @abstractmethod
    async def reply(self, messages: list[dict[str, str]], max_tokens: int) -> Reply:
        """The model's next turn given the whole conversation so far."""


class Policy(ABC):
    name: str

    @abstractmethod
    def session(self, task: Task) -> PolicySession:
        """A fresh session for one episode of ``task``."""
