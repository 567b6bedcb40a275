"""The trajectory record: every message, parsed action, observation, exit code and timing of one
episode, serialisable to one JSON line."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Termination(StrEnum):
    FINISHED = "finished"
    MAX_TURNS = "max_turns"
    CONTEXT_EXHAUSTED = "context_exhausted"
    TIMEOUT = "timeout"
    PARSE_ERRORS = "parse_errors"
    # Infrastructure, not the agent: training masks these instead of scoring them.
    SANDBOX_ERROR = "sandbox_error"
    POLICY_ERROR = "policy_error"

    @property
    def infrastructure(self) -> bool:
        return self in (Termination.SANDBOX_ERROR, Termination.POLICY_ERROR)

    @property
    def truncated(self) -> bool:
        """The episode was cut off, not ended by the agent (``credit.mask_truncated`` drops its loss)."""
        return self in (Termination.MAX_TURNS, Termination.CONTEXT_EXHAUSTED)


@dataclass
class Turn:
    index: int
    model_text: str
    # Parsed actions as {"tool": ..., "args": {...}}.
    actions: list[dict[str, Any]]
    # One record per executed action: tool, ok, output, exit_code, duration_sec, timed_out.
    results: list[dict[str, Any]]
    observation: str | None
    parse_error: str | None
    started_at: float
    duration_sec: float
    # Tokens in the context after the model's reply (prompt + all responses so far), when known.
    context_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class Trajectory:
    task_id: str
    content_hash: str
    protocol: str
    policy: str
    messages: list[dict[str, str]] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    termination: str | None = None
    termination_detail: str = ""
    started_at: float = 0.0
    duration_sec: float = 0.0
    # The verifier's record (terminal_rl.sandbox.verify.verifier.VerificationResult.to_dict()).
    verification: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def score(self) -> float | None:
        return None if self.verification is None else self.verification["score"]

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> Trajectory:
        data = json.loads(line)
        data["turns"] = [Turn(**turn) for turn in data["turns"]]
        return cls(**data)
