"""``online_variance``: a GRPO group whose scores do not vary carries no learning signal.

The deciding score follows the reward in use for the group's stage: while the judge weight is > 0
the judge may be the only signal (the point of the early stages), so the blended reward decides;
once it is 0, the test score decides. Filtering runs through verl's own group filtering on a metric
we provide (``filter_signal``): a group to drop gets a constant signal, a group to keep a varying
one. Refills are bounded: after ``max_refills`` dropped groups in a step, zero-variance groups are
kept (and counted), so a run whose groups never vary still finishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import pvariance


def group_variances(rewards: Sequence[float], tests: Sequence[float]) -> tuple[float, float]:
    return pvariance(rewards) if len(rewards) > 1 else 0.0, pvariance(tests) if len(tests) > 1 else 0.0


def filter_signal(rewards: Sequence[float], tests: Sequence[float], judge_weight: float,
                  refills_used: int, max_refills: int) -> tuple[list[float], bool]:
    """Per-sample values of the filter metric, and whether the group is dropped (refilled).

    Returns:
        (signal per sample, dropped). A dropped group's signal is constant (verl evicts it); a kept
        group's signal is 0, 1, 2, ... (never constant for groups of 2 or more).
    """
    reward_var, tests_var = group_variances(rewards, tests)
    deciding = reward_var if judge_weight > 0 else tests_var
    dropped = deciding == 0.0 and refills_used < max_refills and len(rewards) > 1
    return ([0.0] * len(rewards) if dropped else [float(i) for i in range(len(rewards))]), dropped
