"""Any chat model through litellm (third-party APIs, or a local OpenAI-compatible server).

API keys come from the environment variable the config names, never from the config itself. The
agent's context budget applies by the history mode's rule (``terminal_rl.agent.tokens.turn_room``),
on the server's own token counts (``usage``): a turn whose prompt training would have refused ends
the episode as context exhausted, its reply unused. The server counts the prompt only once it has it,
so a turn's ``max_tokens`` is bounded by the counts before its new observation (append mode may then
write up to one observation's length past the response length; the next turn ends the episode).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass, replace

from terminal_rl.agent.policies.base import ContextExhausted, Policy, PolicyError, PolicySession, Reply
from terminal_rl.agent.tokens import SequenceLimits, continues, turn_room
from terminal_rl.tasks.model import Task


@dataclass(frozen=True)
class LiteLLMConfig:
    # litellm model string, e.g. "openai/qwen3-8b" for an OpenAI-compatible server.
    model: str
    base_url: str
    # Name of the environment variable holding the API key ("" for none).
    api_key_env: str
    temperature: float
    max_retries: int
    timeout_sec: float
    # Requests in flight at once across all episodes of this process.
    concurrency: int


def quiet_litellm():
    """litellm, without its per-request INFO lines and "Provider List" banners on the console
    (warnings and errors still show)."""
    import litellm

    litellm.suppress_debug_info = True
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return litellm


def request_params(model: str, base_url: str, api_key: str | None, temperature: float, max_tokens: int) -> dict:
    """The provider parameters of one completion, as litellm's own per-model capability data allows
    them: ``drop_params`` has litellm leave out what the model refuses (reasoning models take no
    temperature but the default) instead of failing the call."""
    return {
        "model": model,
        "api_base": base_url or None,
        "api_key": api_key or "none",
        "temperature": temperature,
        "max_tokens": max_tokens,
        "drop_params": True,
    }


# What to fix for the errors litellm maps a refused probe to.
_FIXES = {
    "AuthenticationError": "the key is refused: set the variable api_key_env names, or name the right one",
    "PermissionDeniedError": "the key may not use this model",
    "NotFoundError": "the endpoint does not serve this model: check the model name (and its provider prefix)",
    "BadRequestError": "the endpoint refused the request's parameters",
    "APIConnectionError": "nothing answers at base_url: check it (and the proxy)",
    "Timeout": "the endpoint did not answer in time",
}


async def endpoint_problem(config: LiteLLMConfig) -> str | None:
    """One tiny call before a run spends anything: None when the endpoint answers, else what failed and
    what to fix (key, model, parameter, address)."""
    probe = LiteLLMPolicy(replace(config, max_retries=0, timeout_sec=min(config.timeout_sec, 60.0)))
    try:
        await probe.complete([{"role": "user", "content": "Reply with the word ok."}], 8)
    except PolicyError as error:
        fix = _FIXES.get(type(error.__cause__).__name__)
        return f"{error}" + (f" ({fix})" if fix else "")
    return None


class LiteLLMPolicy(Policy):
    def __init__(self, config: LiteLLMConfig, history: str = "append", limits: SequenceLimits = SequenceLimits()):
        self.config = config
        self.history, self.limits = history, limits
        self.name = f"litellm:{config.model}"
        self._slots = asyncio.Semaphore(config.concurrency)

    def session(self, task: Task) -> PolicySession:
        return _LiteLLMSession(self)

    async def complete(self, messages: list[dict[str, str]], max_tokens: int) -> Reply:
        litellm = quiet_litellm()
        config = self.config
        api_key = os.environ.get(config.api_key_env) if config.api_key_env else None
        started = time.monotonic()
        async with self._slots:
            try:
                response = await litellm.acompletion(
                    messages=messages,
                    timeout=config.timeout_sec,
                    num_retries=config.max_retries,
                    **request_params(config.model, config.base_url, api_key, config.temperature, max_tokens),
                )
            except Exception as error:  # litellm raises many types; all mean "no reply"
                raise PolicyError(f"{config.model}: {type(error).__name__}: {error}") from error
        usage = getattr(response, "usage", None)
        try:
            cost = float(litellm.completion_cost(completion_response=response))
        except Exception:  # unknown models have no price table entry
            cost = 0.0
        return Reply(
            text=response.choices[0].message.content or "",
            latency_sec=time.monotonic() - started,
            completion_tokens=getattr(usage, "completion_tokens", None),
            context_tokens=getattr(usage, "total_tokens", None),
            cost_usd=cost,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
        )


class _LiteLLMSession(PolicySession):
    """One episode's turns, within the agent's context budget by the server's token counts."""

    def __init__(self, policy: LiteLLMPolicy):
        self._policy = policy
        self._first_prompt: int | None = None  # of the current segment (append's rule)
        self._context = 0  # prompt + completion of the latest turn, as the server counted them
        self._sent: list[dict[str, str]] = []  # the latest messages and their reply

    async def reply(self, messages: list[dict[str, str]], max_tokens: int) -> Reply:
        if self._sent and not continues(self._sent, messages):  # a context policy rewrote the context:
            self._first_prompt, self._context = None, 0  # a new segment, as a token session starts one
        # Bounded first by what the server counted before this turn's observation (a lower bound).
        first = self._first_prompt if self._first_prompt is not None else self._context
        max_tokens = self._bounded(max_tokens, first, self._context)
        reply = await self._policy.complete(messages, max_tokens)
        if reply.prompt_tokens is None:  # a server without usage: the episode's own budget only
            return reply
        self._first_prompt = reply.prompt_tokens if self._first_prompt is None else self._first_prompt
        try:  # where training would not have run this turn, it is not used (its cost is still counted)
            self._bounded(max_tokens, self._first_prompt, reply.prompt_tokens)
        except ContextExhausted as error:
            error.cost_usd = reply.cost_usd
            raise
        self._context = reply.prompt_tokens + (reply.completion_tokens or 0)
        self._sent = [*messages, {"role": "assistant", "content": reply.text}]
        return reply

    def _bounded(self, max_tokens: int, first_prompt: int, prompt_tokens: int) -> int:
        room = turn_room(self._policy.history, self._policy.limits, first_prompt, prompt_tokens)
        return max_tokens if room is None else min(max_tokens, room)
