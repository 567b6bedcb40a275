"""The judge service: one per run, owning the cache, the budget, the rate limit and the backend.

Hosted once per run (in training a named Ray actor, see ``ray_actor.py``; in evaluation and
calibration in-process), so the cache and the budget hold across every rollout worker and node.
It is only ever called after the rollout's container is gone. Besides the outcome rubric's verdicts
it answers other prompts of the judge's model through the same machinery (``ask``: the PRM step
scores of the datasets).

Reliability: retries with exponential backoff on rate limits, timeouts and server errors; a verdict
that does not parse is sent back once with the error; anything else is *missing* (never scored 0).
Cost control: a cache keyed by (prompt version, backend, what was asked), persisted as JSON
lines in the run's judge directory; a token and/or dollar budget; optionally, judging only groups
whose test scores do not already separate the rollouts.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from terminal_rl.agent.policies.model_json import MalformedReply
from terminal_rl.judge.backend import JudgeBackend, read_backend
from terminal_rl.judge.render import judge_messages
from terminal_rl.judge.rubric import parse_verdict, rubric_text

log = logging.getLogger(__name__)
A = TypeVar("A", bound="Asked")
CACHE_FILE = "cache.jsonl"
# litellm exception class names worth a retry (the rest, e.g. authentication, are not).
RETRYABLE = {
    "RateLimitError",
    "Timeout",
    "APIConnectionError",
    "InternalServerError",
    "ServiceUnavailableError",
    "APIError",
    "BadGatewayError",
}


@dataclass(frozen=True)
class JudgeConfig:
    model: str
    base_url: str
    api_key_env: str
    rubric: str
    temperature: float
    max_tokens: int
    timeout_sec: float
    max_retries: int
    backoff_sec: float
    concurrency: int
    budget_usd: float
    budget_tokens: int
    only_unseparated_groups: bool
    max_model_chars: int
    max_observation_chars: int
    calibration_dir: str

    @property
    def default_backend(self) -> JudgeBackend:
        return JudgeBackend(self.model, self.base_url, self.api_key_env)

    def endpoint_problem(self) -> str | None:
        """One tiny call to the judge's model: None when it answers, else what failed and its fix."""
        from terminal_rl.agent.policies.litellm_policy import LiteLLMConfig, endpoint_problem

        probe = LiteLLMConfig(self.model, self.base_url, self.api_key_env, self.temperature, 0, self.timeout_sec, 1)
        return asyncio.run(endpoint_problem(probe))


@dataclass(frozen=True)
class JudgeRequest:
    task_prompt: str
    environment: str
    # The trajectory as rendered by terminal_rl.judge.render.render_trajectory.
    rendered: str


@dataclass(kw_only=True)
class Asked:
    """What one question to the judge's model cost, and why it has no answer (``missing_reason`` set:
    missing, never a low grade)."""

    backend: str
    missing_reason: str = ""
    cached: bool = False
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_sec: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(kw_only=True)
class Judgement(Asked):
    """One grade by the outcome rubric (``score`` None = missing: never treat it as 0)."""

    score: float | None = None
    parts: dict[str, float] = field(default_factory=dict)
    modifiers: dict[str, float] = field(default_factory=dict)
    penalties: dict[str, float] = field(default_factory=dict)
    rationale: str = ""


@dataclass(kw_only=True)
class Answer(Asked):
    """The parsed reply to a prompt of the caller's (``JudgeService.ask``); None when missing."""

    value: Any = None


@dataclass
class JudgeStats:
    requests: int = 0
    calls: int = 0
    cache_hits: int = 0
    judged: int = 0
    missing: int = 0
    budget_refusals: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_sec: float = 0.0


class JudgeService:
    def __init__(self, config: JudgeConfig, control_dir: Path):
        self.config = config
        self.control_dir = Path(control_dir)
        self.rubric = rubric_text(config.rubric)
        self.stats = JudgeStats()
        self._slots = asyncio.Semaphore(config.concurrency)
        self._cache: dict[str, dict] = self._load_cache()

    # The backend is re-read from the control file for every group (one stat and a small read), so
    # a `judge command=switch` applies from the next group on, never inside one.
    @property
    def backend(self) -> JudgeBackend:
        return read_backend(self.control_dir, self.config.default_backend)

    def budget_left(self) -> bool:
        config, stats = self.config, self.stats
        over_usd = config.budget_usd > 0 and stats.cost_usd >= config.budget_usd
        over_tokens = config.budget_tokens > 0 and stats.prompt_tokens + stats.completion_tokens >= config.budget_tokens
        return not (over_usd or over_tokens)

    async def judge_group(self, requests: list[JudgeRequest]) -> list[Judgement]:
        """Judge a GRPO group, every sample by the same backend."""
        backend = self.backend
        return list(await asyncio.gather(*(self.judge(r, backend) for r in requests)))

    async def judge(self, request: JudgeRequest, backend: JudgeBackend | None = None) -> Judgement:
        """A grade of one trajectory by the outcome rubric."""
        backend = backend or self.backend
        messages = judge_messages(self.rubric, request.task_prompt, request.environment, request.rendered)
        key = self.cache_key(self.config.rubric, backend, [request.task_prompt, request.environment, request.rendered])
        return await self._asked(Judgement, backend, key, messages, _verdict_fields)

    async def ask(self, prompt_version: str, messages: list[dict], parse: Callable[[str], Any]) -> Answer:
        """``parse(reply)`` of the active backend's reply to ``messages`` (a prompt of the caller's, named
        by ``prompt_version`` in the cache key), through the same cache, budget, retries and one
        correction round as a verdict. ``parse`` raises ``MalformedReply`` for an unusable reply and
        returns a JSON-serialisable value (it is cached)."""
        backend = self.backend
        key = self.cache_key(prompt_version, backend, messages)
        return await self._asked(Answer, backend, key, messages, lambda text: {"value": parse(text)})

    async def _asked(self, kind: type[A], backend: JudgeBackend, key: str, messages, fields) -> A:
        """An answer of ``kind`` with the fields ``fields(reply)`` gives: from the cache, refused by the
        budget, or asked of ``backend``. The budget is checked once a slot is free and the cost counted
        before the slot is let go, so calls waiting for a slot see what the ones before them spent (at
        most ``concurrency`` calls in flight can overshoot it)."""
        self.stats.requests += 1
        if key in self._cache:
            self.stats.cache_hits += 1
            return kind(**{**self._cache[key], "cached": True})
        async with self._slots:
            if not self.budget_left():
                self.stats.budget_refusals += 1
                self.stats.missing += 1
                log.warning(
                    "JUDGE BUDGET EXHAUSTED (spent $%.4f, %d tokens): the judge is missing for this sample",
                    self.stats.cost_usd,
                    self.stats.prompt_tokens + self.stats.completion_tokens,
                )
                return kind(backend=backend.label, missing_reason="budget exhausted")
            answer, started = kind(backend=backend.label), time.monotonic()
            parsed = await self._answer(backend, messages, fields, answer)
            answer.latency_sec = time.monotonic() - started
            for name, value in (parsed or {}).items():
                setattr(answer, name, value)
            self._account(answer)
        if parsed is not None:
            self._cache[key] = answer.to_dict()
            self._append_cache(key, answer)
        return answer

    def cache_key(self, prompt_version: str, backend: JudgeBackend, asked: list) -> str:
        """(prompt version, backend, what was asked): a verdict's is its rubric version and request
        fields (the key runs before this one wrote), another prompt's its messages."""
        return hashlib.sha256(json.dumps([prompt_version, backend.label, *asked]).encode()).hexdigest()

    async def _answer(self, backend: JudgeBackend, messages: list[dict], fields, answer: Asked) -> dict | None:
        """``fields(reply)``, with one correction request after an unusable reply; None (the reason in
        ``answer.missing_reason``) when the backend gave nothing usable."""
        for _ in range(2):  # the answer, and one correction after a format error
            text = await self._call(backend, messages, answer)
            if text is None:
                return None
            try:
                parsed = fields(text)
            except MalformedReply as error:
                answer.missing_reason = f"unparseable reply: {error}"
                messages = [
                    *messages,
                    {"role": "assistant", "content": text},
                    {
                        "role": "user",
                        "content": f"Your answer is not valid: {error}. "
                        "Reply with the JSON object only, in the format given.",
                    },
                ]
                continue
            answer.missing_reason = ""
            return parsed
        return None

    async def _call(self, backend: JudgeBackend, messages: list[dict], answer: Asked) -> str | None:
        """One answer from the backend, retrying transient failures; None (reason recorded) on failure."""
        from terminal_rl.agent.policies.litellm_policy import quiet_litellm, request_params

        litellm = quiet_litellm()

        config = self.config
        for attempt in range(config.max_retries + 1):
            answer.calls += 1
            self.stats.calls += 1
            try:
                response = await litellm.acompletion(
                    messages=_with_prompt_cache(backend.model, messages),
                    timeout=config.timeout_sec,
                    num_retries=0,
                    **request_params(
                        backend.model, backend.base_url, backend.api_key(), config.temperature, config.max_tokens
                    ),
                )
            except Exception as error:  # litellm maps provider errors to its own exception types
                name = type(error).__name__
                answer.missing_reason = f"{name}: {str(error)[:200]}"
                if name not in RETRYABLE or attempt == config.max_retries:
                    return None
                await asyncio.sleep(config.backoff_sec * 2**attempt)
                continue
            usage = getattr(response, "usage", None)
            answer.prompt_tokens += getattr(usage, "prompt_tokens", 0) or 0
            answer.completion_tokens += getattr(usage, "completion_tokens", 0) or 0
            try:
                answer.cost_usd += float(litellm.completion_cost(completion_response=response))
            except Exception:  # models without a price table entry cost what the budget counts in tokens
                pass
            return response.choices[0].message.content or ""
        return None

    def _account(self, answer: Asked) -> None:
        stats = self.stats
        stats.prompt_tokens += answer.prompt_tokens
        stats.completion_tokens += answer.completion_tokens
        stats.cost_usd += answer.cost_usd
        stats.latency_sec += answer.latency_sec
        if answer.missing_reason:
            stats.missing += 1
        else:
            stats.judged += 1

    def _load_cache(self) -> dict[str, dict]:
        path = self.control_dir / CACHE_FILE
        if not path.is_file():
            return {}
        cache = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                entry = json.loads(line)
                cache[entry["key"]] = entry["judgement"]
        return cache

    def _append_cache(self, key: str, answer: Asked) -> None:
        self.control_dir.mkdir(parents=True, exist_ok=True)
        with (self.control_dir / CACHE_FILE).open("a", encoding="utf-8") as out:
            out.write(json.dumps({"key": key, "judgement": answer.to_dict()}) + "\n")

    def metrics(self) -> dict[str, float]:
        """``judge/*`` figures for the trainer's metrics and reports."""
        return {f"judge/{name}": float(value) for name, value in asdict(self.stats).items()}


def _verdict_fields(text: str) -> dict:
    verdict = parse_verdict(text)
    return {
        "score": verdict.score,
        "parts": verdict.parts,
        "modifiers": verdict.modifiers,
        "penalties": verdict.penalties,
        "rationale": verdict.rationale,
    }


def _with_prompt_cache(model: str, messages: list[dict]) -> list[dict]:
    """Mark the (long, constant) rubric as cacheable for providers that need it marked; OpenAI-style
    providers cache long prefixes by themselves."""
    if not model.startswith(("anthropic/", "claude")):
        return messages
    system, *rest = messages
    return [
        {
            "role": "system",
            "content": [{"type": "text", "text": system["content"], "cache_control": {"type": "ephemeral"}}],
        },
        *rest,
    ]
