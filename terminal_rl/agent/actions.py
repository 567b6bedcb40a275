"""Parsed actions and their results: the data every protocol produces and every tool consumes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Action:
    """One validated action: a tool name and its arguments."""

    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class ParseResult:
    """Either actions or feedback telling the model exactly what was wrong and the correct form."""

    actions: list[Action] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class ActionResult:
    """What one action did, as structured data (rendered into an observation by the protocol)."""

    tool: str
    ok: bool
    output: str
    exit_code: int | None = None
    duration_sec: float = 0.0
    timed_out: bool = False
    # True for `finish` (and a protocol's "task complete"): the episode ends after this action.
    finished: bool = False
