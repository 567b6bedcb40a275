"""Group-level scoring for GRPO: the rollouts of one prompt are scored together, because the decisions
that shape a group's advantages need the whole group.

* Infrastructure failures (sandbox or model server) are not the agent's: a group with any such
  rollout is *masked* (every sample gets the same reward and no loss tokens), never trained on as 0.
* The judge is asked once per group (after every container is gone), and only when a judge weight
  is in use; with ``judge.only_unseparated_groups`` only groups whose test scores are all equal.
* A sample the judge could not grade makes the whole group fall back to the mix without the judge
  (or drop), so no group mixes judged and unjudged rewards.

``GroupBarrier`` gathers the ``n`` concurrent sessions of a prompt inside one rollout worker: each
session submits its trajectory and awaits the group's scores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from terminal_rl.agent.trajectory import Termination, Trajectory
from terminal_rl.rewards.components import ComponentScore, all_components
from terminal_rl.rewards.mix import RewardMix, score_group

# (trajectories, test scores) -> one judgement dict per trajectory (terminal_rl.judge.service.Judgement)
JudgeGroup = Callable[[list[Trajectory], list[float]], Awaitable[list[dict]]]


@dataclass
class GroupScores:
    """Per-sample rewards of one group, and how they were decided."""

    rewards: list[float]
    components: list[dict[str, ComponentScore]]
    weights: dict[str, float]
    judgements: list[dict | None]
    # Whole group excluded from the loss: infrastructure failure, or dropped for a missing judge.
    masked: bool = False
    mask_reason: str = ""
    judge_fallback: bool = False
    # data_filter=online_variance: the per-sample filter metric, and whether the group is dropped.
    filter_signal: list[float] | None = None
    filtered: bool = False


async def score_rollout_group(trajectories: list[Trajectory], mix: RewardMix, max_turns: int,
                              judge: JudgeGroup | None) -> GroupScores:
    infrastructure = [t for t in trajectories if t.termination and Termination(t.termination).infrastructure]
    if infrastructure:
        reason = f"{len(infrastructure)} of {len(trajectories)} rollouts hit an infrastructure failure " \
                 f"({infrastructure[0].termination}: {infrastructure[0].termination_detail[:120]})"
        return _masked(trajectories, mix, max_turns, reason)
    judgements: list[dict | None] = [None] * len(trajectories)
    if mix.weights.get("judge", 0.0) > 0 and judge is not None:
        tests = [float((t.verification or {}).get("score", 0.0)) for t in trajectories]
        judgements = list(await judge(trajectories, tests))
    components = [all_components(t, j, max_turns) for t, j in zip(trajectories, judgements)]
    group = score_group(components, mix)
    if group.dropped:
        return _masked(trajectories, mix, max_turns, f"dropped: judge missing for {group.missing}", judgements)
    return GroupScores(group.rewards, components, group.weights, judgements, judge_fallback=group.fallback)


def _masked(trajectories: list[Trajectory], mix: RewardMix, max_turns: int, reason: str,
            judgements: list[dict | None] | None = None) -> GroupScores:
    judgements = judgements or [None] * len(trajectories)
    components = [all_components(t, j, max_turns) for t, j in zip(trajectories, judgements)]
    return GroupScores([0.0] * len(trajectories), components, dict(mix.weights), judgements, True, reason)


@dataclass
class _Group:
    size: int
    trajectories: dict[int, Trajectory] = field(default_factory=dict)
    result: asyncio.Future | None = None


class GroupBarrier:
    """Collects the ``size`` sessions of each group id; the last arrival scores the group for all."""

    def __init__(self, score: Callable[[list[Trajectory]], Awaitable[GroupScores]]):
        self._score = score
        self._groups: dict[str, _Group] = {}

    async def submit(self, group_id: str, size: int, index: int, trajectory: Trajectory) -> tuple[GroupScores, int]:
        """Submit session ``index`` of a group; returns the group's scores and this sample's position."""
        group = self._groups.setdefault(group_id, _Group(size))
        if group.result is None:
            group.result = asyncio.get_running_loop().create_future()
        group.trajectories[index] = trajectory
        if len(group.trajectories) == group.size:
            ordered = [group.trajectories[i] for i in sorted(group.trajectories)]
            try:
                group.result.set_result(await self._score(ordered))
            except Exception as error:  # scoring failed: every waiter sees it, none hangs
                group.result.set_exception(error)
            finally:
                del self._groups[group_id]
        scores = await asyncio.shield(group.result)
        return scores, sorted(group.trajectories).index(index)
