"""Our advantage estimators, registered through verl's own ``register_adv_est``, each built on verl's GRPO
estimator itself: MT-GRPO (``algorithm.adv_estimator=mt_grpo``) and the learning proof's controls
(``grpo_shuffled``: GRPO on each group's rewards in random order, ``rewards/shuffle_control.py``;
``grpo_negated``: GRPO on the negated rewards, which must unlearn).

verl calls a registered estimator with the token-level rewards, the response mask, the group index
and the algorithm config only (``trainer/ppo/ray_trainer.py`` l. 248-279), so turn boundaries cannot
reach it through its arguments. They travel with each sample instead: the agent loop puts the
sample's turn spans and per-turn rewards in its extra fields (``terminal_rl/rewards/turn_credit.py``),
and the trainer's advantage step reads them for the batch's rows, in the order verl's advantage step
reads the batch (``trainer/ppo/v1/trainer_base.py`` l. 1746), and hands them to this estimator for
that one call (``turns_for_batch``). For estimators other than GRPO verl passes every row of the
batch (``trainer/ppo/v1/utils.py`` l. 167-176): with ``agent.history=append`` a row is a whole
trajectory, which is the mode MT-GRPO supports (preflight rejects ``per_turn``).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage, register_adv_est

from terminal_rl.rewards.shuffle_control import shuffle_within_groups
from terminal_rl.rewards.turn_credit import TurnCredit, token_turns, turn_advantages

MT_GRPO = "mt_grpo"
GRPO_SHUFFLED = "grpo_shuffled"
GRPO_NEGATED = "grpo_negated"
# Per-position advantage metrics are logged for the first turns only (the rest would flood the logger).
LOGGED_POSITIONS = 8


@dataclass
class BatchTurns:
    """The batch's rows in verl's order: each row's turn spans ``[start, end)`` in response positions
    and its per-turn rewards. ``metrics`` is filled by the estimator."""

    spans: list[list[tuple[int, int]]]
    rewards: list[list[float]]
    credit: TurnCredit
    metrics: dict[str, float] = field(default_factory=dict)


_BATCH: contextvars.ContextVar[BatchTurns | None] = contextvars.ContextVar("terminal_rl_batch_turns", default=None)


@contextlib.contextmanager
def turns_for_batch(turns: BatchTurns) -> Iterator[BatchTurns]:
    token = _BATCH.set(turns)
    try:
        yield turns
    finally:
        _BATCH.reset(token)


@register_adv_est(MT_GRPO)
def mt_grpo_advantage(
    token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: np.ndarray, config=None, **_
) -> tuple[torch.Tensor, torch.Tensor]:
    """A = (1 - alpha) * A_outcome + alpha * A_turn(t) on each token of turn t (0 elsewhere).

    Shapes: ``token_level_rewards`` and ``response_mask`` (batch, response_length), ``index`` (batch,)
    group ids; returns (advantages, returns), both (batch, response_length)."""
    turns = _BATCH.get()
    if turns is None or len(turns.spans) != len(index):
        raise RuntimeError(
            "adv_estimator=mt_grpo needs each row's turn spans from the trainer's advantage step "
            "(terminal_rl.integrations.verl.trainer); it cannot run in another trainer"
        )
    credit = turns.credit
    by_std = bool(config.get("norm_adv_by_std_in_grpo", True)) if config is not None else True
    outcome, _ = compute_grpo_outcome_advantage(token_level_rewards, response_mask, index, credit.epsilon, by_std)
    per_turn = turn_advantages(turns.rewards, list(index), credit.epsilon, by_std)
    length = response_mask.shape[1]
    turn_part = torch.zeros_like(outcome)
    for row, (spans, values) in enumerate(zip(turns.spans, per_turn)):
        positions = torch.tensor(token_turns(spans[: len(values)], length))
        reached = positions >= 0
        turn_part[row, reached] = torch.tensor(values, dtype=outcome.dtype)[positions[reached]]
    advantages = ((1 - credit.alpha) * outcome + credit.alpha * turn_part) * response_mask
    tokens = response_mask.sum(-1)
    row_outcome = (outcome * response_mask).sum(-1) / tokens.clamp(min=1)
    turns.metrics.update(position_metrics(row_outcome, per_turn, credit.alpha, tokens > 0))
    return advantages, advantages


@register_adv_est(GRPO_SHUFFLED)
def shuffled_grpo_advantage(
    token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: np.ndarray, config=None, **_
) -> tuple[torch.Tensor, torch.Tensor]:
    """verl's GRPO advantage of each group's rewards shuffled among the group's rows. verl's GRPO
    reads a row's reward as the sum of its token-level rewards (``core_algos.py`` l. 304), so the
    shuffled reward is placed on the first token. Every row is a trajectory (``agent.history=append``,
    checked by preflight). Shapes as ``mt_grpo_advantage``."""
    scores = token_level_rewards.sum(dim=-1).tolist()
    shuffled = torch.zeros_like(token_level_rewards)
    shuffled[:, 0] = torch.tensor(shuffle_within_groups(scores, [str(i) for i in index]), dtype=shuffled.dtype)
    return _grpo(shuffled, response_mask, index, config)


@register_adv_est(GRPO_NEGATED)
def negated_grpo_advantage(
    token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: np.ndarray, config=None, **_
) -> tuple[torch.Tensor, torch.Tensor]:
    """verl's GRPO advantage of the negated rewards: each response's advantage with its sign flipped,
    so a pipeline that learns from its rewards must get worse under it (the learning proof's negative
    control). Shapes as ``mt_grpo_advantage``."""
    return _grpo(-token_level_rewards, response_mask, index, config)


def _grpo(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: np.ndarray, config):
    """verl's GRPO outcome advantage under the algorithm config's normalisation and epsilon."""
    by_std = bool(config.get("norm_adv_by_std_in_grpo", True)) if config is not None else True
    epsilon = float(config.get("epsilon", 1e-6)) if config is not None else 1e-6
    return compute_grpo_outcome_advantage(token_level_rewards, response_mask, index, epsilon, by_std)


def position_metrics(
    outcome: torch.Tensor, per_turn: list[list[float]], alpha: float, trained: torch.Tensor
) -> dict[str, float]:
    """Mean and std of the advantage at each turn position over the trained rows, and the mean spread
    (max - min) of one trajectory's turn advantages: > 0 once turns get different credit.
    ``outcome``: (batch,) each row's outcome advantage."""
    values: dict[int, list[float]] = {}
    spreads = []
    for row, turn_values in enumerate(per_turn):
        if not bool(trained[row]) or not turn_values:
            continue
        mixed = [(1 - alpha) * float(outcome[row]) + alpha * v for v in turn_values]
        spreads.append(max(mixed) - min(mixed))
        for t, value in enumerate(mixed[:LOGGED_POSITIONS]):
            values.setdefault(t, []).append(value)
    metrics = {
        f"advantage/turn_{t}/{name}": float(fn(series))
        for t, series in values.items()
        for name, fn in (("mean", np.mean), ("std", np.std))
    }
    if spreads:
        metrics["advantage/turn_spread"] = float(np.mean(spreads))
    return metrics
