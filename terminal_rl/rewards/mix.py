"""The reward mix: final reward = sum of weight x component score, decided per GRPO group.

GRPO normalises rewards within a group, so every sample of a group must be scored with the same
weights. When any sample lacks a weighted component (the judge failed for it), the whole group
falls back to the mix without that component, weights renormalised, or is dropped (config); the
group is flagged and counted either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from terminal_rl.rewards.components import ComponentScore


class MissingPolicy(StrEnum):
    RENORMALIZE = "renormalize"
    DROP = "drop"


@dataclass(frozen=True)
class RewardMix:
    """Component name -> weight (>= 0, summing to 1) and what to do when one is missing."""

    weights: dict[str, float]
    missing: MissingPolicy = MissingPolicy.RENORMALIZE

    def __post_init__(self) -> None:
        if any(w < 0 for w in self.weights.values()) or abs(sum(self.weights.values()) - 1.0) > 1e-6:
            raise ValueError(f"reward weights {self.weights} must be >= 0 and sum to 1")
        object.__setattr__(self, "missing", MissingPolicy(self.missing))


@dataclass(frozen=True)
class GroupRewards:
    """Rewards of one GRPO group. ``rewards`` is None when the group is dropped."""

    rewards: list[float] | None
    # The weights actually used (after any fallback); stamped on each sample.
    weights: dict[str, float]
    # Components that were weighted but missing for at least one sample.
    missing: list[str] = field(default_factory=list)

    @property
    def fallback(self) -> bool:
        return bool(self.missing) and self.rewards is not None

    @property
    def dropped(self) -> bool:
        return self.rewards is None


def score_group(samples: Sequence[dict[str, ComponentScore]], mix: RewardMix) -> GroupRewards:
    """Rewards for the samples of one group (each sample: component name -> score)."""
    active = {name: w for name, w in mix.weights.items() if w > 0}
    missing = sorted(name for name in active if any(sample[name].missing for sample in samples))
    if missing and mix.missing is MissingPolicy.DROP:
        return GroupRewards(None, dict(mix.weights), missing)
    weights = dict(mix.weights)
    if missing:
        kept = {name: w for name, w in active.items() if name not in missing}
        total = sum(kept.values())
        if total <= 0:
            return GroupRewards(None, dict(mix.weights), missing)
        weights = {name: (kept.get(name, 0.0) / total) for name in mix.weights}
    rewards = [sum(w * (sample[name].score or 0.0) for name, w in weights.items() if w > 0) for sample in samples]
    return GroupRewards(rewards, weights, missing)
