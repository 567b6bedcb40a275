"""Group-level scoring for GRPO: the rollouts of one prompt are scored together, because the decisions
that shape a group's advantages need the whole group.

* Infrastructure failures (sandbox or model server) are not the agent's: a group with any such
  rollout is *masked* (every sample gets the same reward and no loss tokens), never trained on as 0.
* The judge is asked once per group (after every container is gone), and only when a judge weight
  is in use; with ``judge.only_unseparated_groups`` only groups whose test scores are all equal (the
  others keep their test reward). A judge that fails is a missing judgement, never a failed group.
* The forged-fixture guard (``rewards/fixture_guard.py``) applies to every sample's test rewards.
* A sample the judge could not grade makes the whole group fall back to the mix without the judge
  (or drop), so no group mixes judged and unjudged rewards.

``GroupBarrier`` gathers the ``n`` concurrent sessions of a prompt inside one rollout worker: each
session submits its trajectory and awaits the group's scores. A group whose sessions have not all
arrived ``timeout_sec`` after the first one is scored without them: the missing sessions count as
infrastructure failures, so the group is masked and nobody waits forever.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from terminal_rl.agent.trajectory import Termination, Trajectory
from terminal_rl.rewards.components import ComponentScore, all_components, score_tests
from terminal_rl.rewards.fixture_guard import FixtureGuard
from terminal_rl.rewards.mix import RewardMix, score_group

log = logging.getLogger(__name__)
# The shortest wait before a timeout extended by a generation pause is checked again (s).
RECHECK_SEC = 1.0

# trajectories -> one judgement dict per trajectory (terminal_rl.judge.service.Judgement)
JudgeGroup = Callable[[list[Trajectory]], Awaitable[list[dict]]]


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
    # judge.only_unseparated_groups: the tests separated the group, so it was not judged.
    judge_skipped: bool = False
    # data_filter=online_variance: the per-sample filter metric, and whether the group is dropped.
    filter_signal: list[float] | None = None
    filtered: bool = False

    @property
    def test_scores(self) -> list[float]:
        """Each sample's test score (0 where the tests gave none)."""
        return [c["tests"].score or 0.0 for c in self.components]


async def score_rollout_group(
    trajectories: list[Trajectory],
    mix: RewardMix,
    max_turns: int,
    judge: JudgeGroup | None,
    only_unseparated: bool = False,
    guard: FixtureGuard = FixtureGuard.OFF,
) -> GroupScores:
    infrastructure = [t for t in trajectories if t.termination and Termination(t.termination).infrastructure]
    if infrastructure:
        reason = (
            f"{len(infrastructure)} of {len(trajectories)} rollouts hit an infrastructure failure "
            f"({infrastructure[0].termination}: {infrastructure[0].termination_detail[:120]})"
        )
        return _masked(trajectories, mix, max_turns, reason, guard=guard)
    tests = [score_tests(t, guard).score for t in trajectories]
    judged = mix.weights.get("judge", 0.0) > 0 and judge is not None
    skipped = judged and only_unseparated and len(set(tests)) > 1
    if skipped:  # the tests already separate this group: it keeps its test reward
        mix, judged = RewardMix({"tests": 1.0}, mix.missing), False
    judgements: list[dict | None] = [None] * len(trajectories)
    if judged:
        try:
            judgements = list(await judge(trajectories))
        except Exception:  # the judge service failed: every judgement is missing, the mix decides
            log.warning("the judge failed for a group of %s", trajectories[0].task_id, exc_info=True)
    components = [all_components(t, j, max_turns, guard) for t, j in zip(trajectories, judgements)]
    group = score_group(components, mix)
    if group.dropped:
        return _masked(trajectories, mix, max_turns, f"dropped: judge missing for {group.missing}", judgements, guard)
    return GroupScores(
        group.rewards, components, group.weights, judgements, judge_fallback=group.fallback, judge_skipped=skipped
    )


def _masked(
    trajectories: list[Trajectory],
    mix: RewardMix,
    max_turns: int,
    reason: str,
    judgements: list[dict | None] | None = None,
    guard: FixtureGuard = FixtureGuard.OFF,
) -> GroupScores:
    judgements = judgements or [None] * len(trajectories)
    components = [all_components(t, j, max_turns, guard) for t, j in zip(trajectories, judgements)]
    return GroupScores([0.0] * len(trajectories), components, dict(mix.weights), judgements, True, reason)


def missing_session(like: Trajectory, index: int, timeout_sec: float) -> Trajectory:
    """Stands in for a session that never reached the barrier: an infrastructure failure."""
    return Trajectory(
        like.task_id,
        like.content_hash,
        like.protocol,
        like.policy,
        termination=Termination.SANDBOX_ERROR.value,
        termination_detail=f"session {index} did not finish within the group timeout of {timeout_sec:.0f}s",
        # The group's context (training/rollout_context.py), with this session's index.
        metadata={**like.metadata, "session": index},
    )


@dataclass
class _Group:
    size: int
    trajectories: dict[int, Trajectory] = field(default_factory=dict)
    result: asyncio.Future | None = None
    collected: int = 0
    deciding: bool = False
    timer: asyncio.TimerHandle | None = None
    opened_at: float = 0.0


class GroupBarrier:
    """Collects the ``size`` sessions of each group id; the last arrival (or the timeout) scores the
    group for all. ``paused_between(start, end)``: seconds of that wall-clock span during which
    generation was paused (async training); the timeout does not count them."""

    def __init__(
        self,
        score: Callable[[list[Trajectory]], Awaitable[GroupScores]],
        paused_between: Callable[[float, float], Awaitable[float]] | None = None,
    ):
        self._score = score
        self._paused_between = paused_between
        self._groups: dict[str, _Group] = {}

    async def submit(
        self, group_id: str, size: int, index: int, trajectory: Trajectory, timeout_sec: float
    ) -> tuple[GroupScores, int]:
        """Submit session ``index`` of a group; returns the group's scores and this sample's position
        (its index among the group's sessions)."""
        loop = asyncio.get_running_loop()
        group = self._groups.setdefault(group_id, _Group(size))
        if group.result is None:
            group.result = loop.create_future()
            group.opened_at = time.time()
            self._arm(group, timeout_sec, timeout_sec)
        if not group.result.done() and index not in group.trajectories:
            group.trajectories[index] = trajectory
            if len(group.trajectories) == group.size:
                await self._decide(group, timeout_sec)
        scores = await asyncio.shield(group.result)
        group.collected += 1
        if group.collected == group.size:
            del self._groups[group_id]
        return scores, index

    def _arm(self, group: _Group, timeout_sec: float, wait_sec: float) -> None:
        loop = asyncio.get_running_loop()
        group.timer = loop.call_later(wait_sec, lambda: loop.create_task(self._on_timer(group, timeout_sec)))

    async def _on_timer(self, group: _Group, timeout_sec: float) -> None:
        """The timeout, unless generation was paused meanwhile: then wait on for the paused time
        (checked again at least a second later: during a pause the time left stays about the same).
        Pauses that cannot be read count as none: the group is decided, never left waiting."""
        if self._paused_between is not None and not group.deciding:
            now = time.time()
            try:
                paused = await self._paused_between(group.opened_at, now)
            except Exception:
                log.warning("generation pauses unreadable: group decided at its timeout", exc_info=True)
                paused = 0.0
            left = group.opened_at + timeout_sec + paused - now
            if left > 0 and not group.deciding:
                self._arm(group, timeout_sec, max(left, RECHECK_SEC))
                return
        await self._decide(group, timeout_sec)

    async def _decide(self, group: _Group, timeout_sec: float) -> None:
        if group.deciding:
            return
        group.deciding = True
        group.timer.cancel()
        known = next(iter(group.trajectories.values()))
        ordered = [group.trajectories.get(i) or missing_session(known, i, timeout_sec) for i in range(group.size)]
        try:
            group.result.set_result(await self._score(ordered))
        except Exception as error:  # scoring failed: every waiter sees it, none hangs
            group.result.set_exception(error)
