import asyncio

import pytest

from terminal_rl.agent.trajectory import Trajectory, Turn
from terminal_rl.rewards.mix import RewardMix
from terminal_rl.training.group_scoring import GroupBarrier, score_rollout_group

MIX = RewardMix({"tests": 0.65, "judge": 0.35})


def rollout(score, termination="finished"):
    return Trajectory(
        "t",
        "h",
        "p",
        "x",
        termination=termination,
        turns=[Turn(0, "", [], [], "o", None, 0, 0)],
        verification=None if termination == "sandbox_error" else {"score": score},
    )


def judge_returning(*scores):
    calls = []

    async def judge(trajectories):
        calls.append([t.verification["score"] for t in trajectories])
        return [{"score": s, "missing_reason": "" if s is not None else "Timeout"} for s in scores]

    return judge, calls


def run(coro):
    return asyncio.run(coro)


def test_group_blends_tests_and_judge():
    judge, calls = judge_returning(1.0, 0.0)
    scores = run(score_rollout_group([rollout(1.0), rollout(0.0)], MIX, 20, judge))
    assert scores.rewards == pytest.approx([1.0, 0.0])
    assert calls == [[1.0, 0.0]] and not scores.masked and not scores.judge_fallback


def test_missing_judgement_falls_back_for_the_group():
    judge, _ = judge_returning(0.9, None)
    scores = run(score_rollout_group([rollout(0.5), rollout(0.0)], MIX, 20, judge))
    assert scores.rewards == [0.5, 0.0] and scores.judge_fallback
    assert scores.weights == {"tests": 1.0, "judge": 0.0}


def test_infrastructure_failure_masks_the_whole_group_and_skips_the_judge():
    judge, calls = judge_returning(1.0, 1.0)
    scores = run(score_rollout_group([rollout(1.0), rollout(0.0, "sandbox_error")], MIX, 20, judge))
    assert scores.masked and scores.rewards == [0.0, 0.0]
    assert scores.mask_reason.startswith("1 of 2 rollouts hit an infrastructure failure (sandbox_error")
    assert calls == []


def test_no_judge_call_when_its_weight_is_zero():
    judge, calls = judge_returning(1.0)
    scores = run(score_rollout_group([rollout(0.25)], RewardMix({"tests": 1.0, "judge": 0.0}), 20, judge))
    assert scores.rewards == [0.25] and calls == []


def test_barrier_scores_each_group_once_for_all_sessions():
    scored = []

    async def score(trajectories):
        scored.append([t.verification["score"] for t in trajectories])
        return await score_rollout_group(trajectories, RewardMix({"tests": 1.0}), 20, None)

    async def main():
        barrier = GroupBarrier(score)
        sessions = [barrier.submit("uid-1", 3, i, rollout(s), 60) for i, s in ((2, 0.2), (0, 1.0), (1, 0.5))]
        other = barrier.submit("uid-2", 1, 0, rollout(0.7), 60)
        return await asyncio.gather(*sessions, other)

    results = run(main())
    assert scored == [[0.7], [1.0, 0.5, 0.2]] or scored == [[1.0, 0.5, 0.2], [0.7]]
    assert [(r.rewards[i], i) for r, i in results[:3]] == [(0.2, 2), (1.0, 0), (0.5, 1)]


@pytest.mark.parametrize("termination", ["max_turns", "timeout", "context_exhausted", "parse_errors"])
def test_truncated_and_timed_out_trajectories_are_scored_not_masked(termination):
    """The agent ran out of turns, time or context: its own failure, verified and scored as is."""
    scores = run(score_rollout_group([rollout(0.5, termination), rollout(0.0)], RewardMix({"tests": 1.0}), 20, None))
    assert not scores.masked and scores.rewards == [0.5, 0.0]


def test_a_session_that_never_arrives_masks_its_group_after_the_timeout():
    async def score(trajectories):
        return await score_rollout_group(trajectories, RewardMix({"tests": 1.0}), 20, None)

    async def main():
        barrier = GroupBarrier(score)
        arrived = await asyncio.gather(*(barrier.submit("uid", 3, i, rollout(1.0), 0.2) for i in (0, 2)))
        late = await barrier.submit("uid", 3, 1, rollout(1.0), 0.2)  # the straggler gets the decided group
        return arrived, late

    (first, third), late = run(main())
    assert first[0].masked and first[0] is third[0] is late[0], "one decision for the whole group"
    assert "session 1 did not finish within the group timeout" in first[0].mask_reason
    assert [position for _, position in (first, third, late)] == [0, 2, 1]


def test_a_failing_judge_is_a_missing_judgement_not_a_failed_group():
    async def broken(trajectories):
        raise ConnectionError("judge actor died")

    fallback = run(score_rollout_group([rollout(1.0), rollout(0.0)], MIX, 20, broken))
    assert fallback.rewards == [1.0, 0.0] and fallback.judge_fallback and not fallback.masked
    dropped = run(score_rollout_group([rollout(1.0), rollout(0.0)], RewardMix(MIX.weights, "drop"), 20, broken))
    assert dropped.masked and dropped.mask_reason.startswith("dropped: judge missing")


def test_groups_the_tests_separate_keep_their_test_reward_without_the_judge():
    judge, calls = judge_returning(0.2, 0.9)
    separated = run(
        score_rollout_group(
            [rollout(1.0), rollout(0.0)], RewardMix(MIX.weights, "drop"), 20, judge, only_unseparated=True
        )
    )
    assert separated.rewards == [1.0, 0.0] and not separated.masked and separated.judge_skipped and calls == []
    tied = run(
        score_rollout_group(
            [rollout(0.0), rollout(0.0)], RewardMix(MIX.weights, "drop"), 20, judge, only_unseparated=True
        )
    )
    assert calls == [[0.0, 0.0]] and tied.rewards == pytest.approx([0.35 * 0.2, 0.35 * 0.9])


def test_the_barrier_timeout_leaves_out_generation_pauses():
    """Async training: a session waiting out a pause of generation is not late; the group waits for it
    as long as the pause lasted, and no longer."""
    import time

    pause_started = time.time()

    async def paused_between(start, end):
        return max(0.0, min(end, pause_started + 0.3) - max(start, pause_started))

    async def score(trajectories):
        return await score_rollout_group(trajectories, RewardMix({"tests": 1.0}), 20, None)

    async def main():
        barrier = GroupBarrier(score, paused_between)
        first = asyncio.ensure_future(barrier.submit("uid", 2, 0, rollout(1.0), 0.2))
        await asyncio.sleep(0.35)  # past the timeout, within it less the 0.3 s pause
        second = await barrier.submit("uid", 2, 1, rollout(0.0), 0.2)
        late = GroupBarrier(score, paused_between)
        alone = await late.submit("uid", 2, 0, rollout(1.0), 0.2)  # after the pause: the plain timeout
        return await first, second, alone

    first, second, alone = run(main())
    assert not first[0].masked and first[0] is second[0] and first[0].rewards == [1.0, 0.0]
    assert alone[0].masked and "within the group timeout" in alone[0].mask_reason


def test_unreadable_pauses_decide_the_group_at_its_timeout():
    async def broken(start, end):
        raise ConnectionError("the pauses actor is gone")

    async def score(trajectories):
        return await score_rollout_group(trajectories, RewardMix({"tests": 1.0}), 20, None)

    async def main():
        return await GroupBarrier(score, broken).submit("uid", 2, 0, rollout(1.0), 0.1)

    scores, _ = run(main())
    assert scores.masked, "decided (its missing session masks it), not left waiting"
