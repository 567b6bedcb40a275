"""Turn-level credit for MT-GRPO (seed 002): one reward per model turn, normalised within the group at
each turn position, so the turns of one long episode get different advantages (pure).

    r(t) = w_outcome * R * gamma^(T-1-t) + w_exec * [turn's commands succeeded] + w_format * [turn parsed]
           + w_efficiency * (max_turns - T) / (max_turns - 1)        (the last term only when R > 0)

``R`` is the trajectory's reward (what the outcome advantage uses) and ``T`` its number of turns. A
turn succeeded when it ran at least one action besides ``finish`` and every one reported ok (bash:
exit code 0, not timed out); a turn that ran nothing (a parse error, or only ``finish``) earns no
exec credit. A turn parsed when the protocol read at least one action from it (a turn cut off by the
episode's clock before parsing did not). At turn
position t the group's samples that reached t are normalised, A_turn = (r - mean) / (std + eps); a
position reached by fewer than two samples has nothing to compare against and gets A_turn = 0.
Each token of turn t then gets A = (1 - alpha) * A_outcome + alpha * A_turn(t).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TurnCredit:
    """``credit.turn`` of the config (conf/train.yaml)."""

    alpha: float
    gamma: float
    w_outcome: float
    w_exec: float
    w_format: float
    w_efficiency: float
    epsilon: float


@dataclass(frozen=True)
class TurnFacts:
    """What one model turn did, from the trajectory record."""

    executed_ok: bool
    parsed: bool


def turn_facts(turns: Sequence[dict]) -> list[TurnFacts]:
    """Facts of each turn of a trajectory (``Trajectory.turns`` as dicts: ``actions``, ``results``,
    ``parse_error``)."""
    facts = []
    for turn in turns:
        ran = [result for result in turn["results"] if result.get("tool") != "finish"]
        facts.append(
            TurnFacts(
                bool(ran) and all(result.get("ok") for result in ran),
                turn["parse_error"] is None and bool(turn["actions"]),
            )
        )
    return facts


def turn_rewards(reward: float, facts: Sequence[TurnFacts], max_turns: int, credit: TurnCredit) -> list[float]:
    """r(t) for each turn of one trajectory."""
    count = len(facts)
    efficiency = (max_turns - count) / (max_turns - 1) if reward > 0 and max_turns > 1 else 0.0
    return [
        credit.w_outcome * reward * credit.gamma ** (count - 1 - t)
        + credit.w_exec * fact.executed_ok
        + credit.w_format * fact.parsed
        + credit.w_efficiency * efficiency
        for t, fact in enumerate(facts)
    ]


def turn_advantages(
    rewards: Sequence[Sequence[float]], groups: Sequence[Hashable], epsilon: float, by_std: bool = True
) -> list[list[float]]:
    """A_turn per sample and turn: each turn position centred on the mean of the group's samples that
    reached it and, with ``by_std``, divided by their std (unbiased, as verl's GRPO: ``torch.std``)."""
    positions: dict[tuple[Hashable, int], list[float]] = defaultdict(list)
    for group, sample in zip(groups, rewards):
        for t, value in enumerate(sample):
            positions[(group, t)].append(value)
    stats = {}
    for key, values in positions.items():
        if len(values) < 2:
            continue
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
        stats[key] = (mean, std)

    def advantage(group: Hashable, t: int, value: float) -> float:
        if (group, t) not in stats:
            return 0.0
        mean, std = stats[(group, t)]
        return (value - mean) / (std + epsilon) if by_std else value - mean

    return [[advantage(group, t, value) for t, value in enumerate(sample)] for group, sample in zip(groups, rewards)]


def token_turns(spans: Sequence[tuple[int, int]], length: int) -> list[int]:
    """Turn index of each of ``length`` response positions (-1: not a model turn's token), from the
    turns' ``[start, end)`` spans; spans cut by the token cap end at ``length``."""
    index = [-1] * length
    for turn, (start, end) in enumerate(spans):
        for position in range(min(start, length), min(end, length)):
            index[position] = turn
    return index
