"""``online_variance``: a GRPO group whose scores do not vary carries no learning signal.

The deciding score follows the reward in use for the group's stage: while the judge weight is > 0
the judge may be the only signal (the point of the early stages), so the blended reward decides;
once it is 0, the test score decides. Filtering runs through verl's own group filtering on a metric
we provide (``filter_signal``): a group to drop gets a constant signal, a group to keep a varying
one. Refills are bounded: after ``max_refills`` dropped groups in a step (across all rollout workers:
``terminal_rl.training.step_ledger``), zero-variance groups are kept (and counted), so a run whose
groups never vary still finishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import pvariance


def group_variances(rewards: Sequence[float], tests: Sequence[float]) -> tuple[float, float]:
    return pvariance(rewards) if len(rewards) > 1 else 0.0, pvariance(tests) if len(tests) > 1 else 0.0


def lacks_signal(rewards: Sequence[float], tests: Sequence[float], judge_weight: float) -> bool:
    """Whether the group's deciding score (the blended reward while the judge weighs, the test score
    once it does not) is the same for every sample, so GRPO learns nothing from it."""
    reward_var, tests_var = group_variances(rewards, tests)
    return len(rewards) > 1 and (reward_var if judge_weight > 0 else tests_var) == 0.0


def filter_signal(size: int, dropped: bool) -> list[float]:
    """Per-sample values of the filter metric: constant for a group to drop (verl evicts it), 0, 1,
    2, ... for a group to keep (never constant for groups of two or more)."""
    return [0.0] * size if dropped else [float(i) for i in range(size)]
