"""The rubric (a versioned prompt file) and the strict parser of the judge's verdict (pure)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from terminal_rl.agent.policies.model_json import MalformedReply, reply_object

PROMPTS = Path(__file__).parent / "prompts"
# Weights of the four graded parts (the reference design's).
PARTS = {"action_output_success": 0.35, "todo_planning": 0.25, "phase_adherence": 0.25, "tool_effectiveness": 0.15}
MODIFIERS = ("error_recovery", "exploration_quality", "efficiency")
MODIFIER_RANGE = (-0.1, 0.1)
PENALTIES = ("thinking_without_acting", "gaming", "skipped_phases")


class VerdictError(MalformedReply):
    """The judge's answer is not a valid verdict; the message is sent back to it once."""


@dataclass(frozen=True)
class Verdict:
    parts: dict[str, float]
    modifiers: dict[str, float]
    penalties: dict[str, float]
    rationale: str

    @property
    def score(self) -> float:
        """Weighted parts + modifiers - penalties, clamped to [0, 1]."""
        raw = sum(PARTS[name] * value for name, value in self.parts.items())
        raw += sum(self.modifiers.values()) - sum(self.penalties.values())
        return min(1.0, max(0.0, raw))


def rubric_text(version: str) -> str:
    path = PROMPTS / f"rubric.{version}.md"
    if not path.is_file():
        raise FileNotFoundError(f"judge.rubric={version!r}: no {path.name} in {PROMPTS}")
    return path.read_text(encoding="utf-8")


def parse_verdict(text: str) -> Verdict:
    """The one JSON object of the answer (``model_json.reply_object``: reasoning dropped, fences and
    prose around it tolerated) with every field in range."""
    try:
        data = reply_object(text)
    except MalformedReply as error:
        raise VerdictError(str(error)) from None
    parts = {name: _number(data, name, 0.0, 1.0) for name in PARTS}
    modifiers = {name: _number(data.get("modifiers", {}), name, *MODIFIER_RANGE, required=False) for name in MODIFIERS}
    penalties = {name: _number(data.get("penalties", {}), name, 0.0, 1.0, required=False) for name in PENALTIES}
    rationale = data.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        raise VerdictError('"rationale" must be a non-empty string')
    return Verdict(parts, modifiers, penalties, rationale.strip())


def _number(data: object, name: str, low: float, high: float, required: bool = True) -> float:
    if not isinstance(data, dict):
        raise VerdictError(f'the object holding "{name}" must be a JSON object')
    if name not in data:
        if required:
            raise VerdictError(f'missing "{name}"')
        return 0.0
    value = data[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise VerdictError(f'"{name}" must be a number, got {value!r}')
    if not low <= value <= high:
        raise VerdictError(f'"{name}" = {value} is outside [{low}, {high}]')
    return float(value)
