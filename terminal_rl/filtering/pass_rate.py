"""``pass_rate`` (offline, before training): keep a task only if a policy's k attempts at it do not
all score the same, and their mean lies inside a band. With partial credit a task can score a
constant 0.4 on every attempt and still teach nothing, so "not all equal" is the test, not 0 < mean < 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TaskVerdict:
    task_id: str
    keep: bool
    reason: str
    scores: tuple[float, ...]
    baseline: float | None


def decide(
    task_id: str, scores: Sequence[float], baseline: float | None, min_mean: float, max_mean: float
) -> TaskVerdict:
    mean = sum(scores) / len(scores) if scores else 0.0
    if not scores:
        return TaskVerdict(task_id, False, "no scored attempt (infrastructure failures)", (), baseline)
    if len(set(scores)) == 1:
        return TaskVerdict(task_id, False, f"all {len(scores)} attempts scored {scores[0]:g}", tuple(scores), baseline)
    if not min_mean <= mean <= max_mean:
        return TaskVerdict(
            task_id, False, f"mean {mean:.2f} outside [{min_mean:g}, {max_mean:g}]", tuple(scores), baseline
        )
    return TaskVerdict(task_id, True, f"scores vary (mean {mean:.2f})", tuple(scores), baseline)


def saved_fraction(verdicts: Sequence[TaskVerdict]) -> float:
    """Share of rollouts (hence GPU time) training no longer spends: the dropped tasks' share."""
    return sum(not v.keep for v in verdicts) / len(verdicts) if verdicts else 0.0


def summary(verdicts: Sequence[TaskVerdict], mean_episode_sec: float) -> Mapping[str, float]:
    return {
        "tasks": len(verdicts),
        "kept": sum(v.keep for v in verdicts),
        "dropped": sum(not v.keep for v in verdicts),
        "saved_fraction": saved_fraction(verdicts),
        "mean_episode_sec": mean_episode_sec,
    }
