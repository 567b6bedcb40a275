"""The episode deadline (``agent/runner.py within_deadline``): asyncio.wait_for less the time the
episode's model calls waited for generation to resume (async training)."""

import asyncio

import pytest

from terminal_rl.agent.runner import within_deadline


async def work(seconds: float, result: str = "done") -> str:
    await asyncio.sleep(seconds)
    return result


def test_work_within_the_deadline_returns_its_result():
    assert asyncio.run(within_deadline(work(0.01), 1.0, None)) == "done"


def test_past_the_deadline_the_work_is_cancelled():
    cancelled = []

    async def slow():
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    with pytest.raises(TimeoutError):
        asyncio.run(within_deadline(slow(), 0.1, None))
    assert cancelled == [True], "the episode is stopped (its sandbox removed), not left running"


def test_paused_time_extends_the_deadline_by_as_much():
    async def paused():
        return 0.3

    assert asyncio.run(within_deadline(work(0.25), 0.1, paused)) == "done", "0.25 s of work, 0.1 s + 0.3 s paused"
    with pytest.raises(TimeoutError):
        asyncio.run(within_deadline(work(1.0), 0.1, paused))


def test_the_work_s_own_failure_is_raised_as_is():
    async def failing():
        raise ValueError("sandbox gone")

    with pytest.raises(ValueError, match="sandbox gone"):
        asyncio.run(within_deadline(failing(), 1.0, None))


def test_an_open_pause_holds_the_deadline_without_spinning():
    """A pause that began just before the deadline and is still going: the time left stays about
    the same while it lasts, so the deadline is checked again once a second, not in a busy loop."""
    import time

    began, asked = time.monotonic() + 0.05, []

    async def paused():
        asked.append(time.monotonic())
        now = time.monotonic()
        return max(0.0, min(now, began + 1.5) - began)  # a 1.5 s pause from 0.05 s on

    assert asyncio.run(within_deadline(work(1.4), 0.1, paused)) == "done"
    assert len(asked) <= 4, f"{len(asked)} checks in 1.4 s"


@pytest.mark.parametrize("paused", [0.0, 9.5])
def test_the_wall_clock_budget_leaves_out_paused_time(monkeypatch, paused):
    """An episode with a 5 s budget whose model call takes 10 s of wall clock: spent at its first turn,
    unless 9.5 s of them were the call waiting for generation to resume (``paused_sec``, asked by the
    runner after each reply); then it runs on to its parse-error limit."""
    from contextlib import asynccontextmanager
    from types import SimpleNamespace

    from terminal_rl.agent import episode as episode_module
    from terminal_rl.agent import runner
    from terminal_rl.agent.episode import EpisodeLimits
    from terminal_rl.agent.policies.base import Reply
    from terminal_rl.agent.protocols import make_protocol
    from terminal_rl.agent.runner import run_episode
    from terminal_rl.tasks.procedural import procedural_tasks
    from tests.support import SMALL_LIMITS

    clock = [100.0]
    monkeypatch.setattr(episode_module, "time", SimpleNamespace(monotonic=lambda: clock[0], time=lambda: clock[0]))

    async def verify(sandbox, task):  # no sandbox here: the verdict is not what this test reads
        return SimpleNamespace(to_dict=dict)

    monkeypatch.setattr(runner, "verify", verify)

    class Session:
        async def reply(self, messages, max_tokens):
            clock[0] += 10.0
            return Reply("no command here")

    async def paused_sec():
        return paused * (clock[0] - 100.0) / 10.0  # this share of each call's 10 s

    class Factory:
        @asynccontextmanager
        async def task_sandbox(self, task, rollout_id, on_slot):
            on_slot()
            yield None  # bash_only shows no terminal screen; unparseable turns run no command

    [task] = procedural_tasks("write_value", 1, 0, ["easy"], SMALL_LIMITS)
    limits = EpisodeLimits(
        max_turns=5, max_tokens_per_turn=64, max_context_tokens=4096, max_consecutive_parse_errors=3, wall_clock_sec=5
    )
    policy = SimpleNamespace(name="scripted", session=lambda task: Session())
    trajectory = asyncio.run(
        run_episode(task, Factory(), make_protocol("bash_only"), policy, limits, deadline_sec=60, paused_sec=paused_sec)
    )
    expected = ("timeout", 1) if paused == 0.0 else ("parse_errors", 3)
    assert (trajectory.termination, len(trajectory.turns)) == expected, trajectory.termination


@pytest.mark.parametrize(
    ("slot_wait", "reply_sec", "expected"), [(0.6, 0.0, "parse_errors"), (0.05, 0.6, "sandbox_error")]
)
def test_the_deadline_leaves_out_the_wait_for_a_sandbox_slot(monkeypatch, slot_wait, reply_sec, expected):
    """More episodes than the node's sandbox slots queue for one (a step beyond the node's cap, the
    batches async training prefetches): 0.6 s queued for a slot does not spend a 0.3 s deadline,
    while three 0.6 s turns after it do (checked again a second after the deadline moved)."""
    from contextlib import asynccontextmanager
    from types import SimpleNamespace

    from terminal_rl.agent import runner
    from terminal_rl.agent.episode import EpisodeLimits
    from terminal_rl.agent.policies.base import Reply
    from terminal_rl.agent.protocols import make_protocol
    from terminal_rl.agent.runner import run_episode
    from terminal_rl.tasks.procedural import procedural_tasks
    from tests.support import SMALL_LIMITS

    async def verify(sandbox, task):
        return SimpleNamespace(to_dict=dict)

    monkeypatch.setattr(runner, "verify", verify)

    class Session:
        async def reply(self, messages, max_tokens):
            await asyncio.sleep(reply_sec)
            return Reply("no command here")

    class Factory:
        @asynccontextmanager
        async def task_sandbox(self, task, rollout_id, on_slot):
            await asyncio.sleep(slot_wait)  # another episode holds the node's last slot
            on_slot()
            yield None

    [task] = procedural_tasks("write_value", 1, 0, ["easy"], SMALL_LIMITS)
    limits = EpisodeLimits(
        max_turns=5, max_tokens_per_turn=64, max_context_tokens=4096, max_consecutive_parse_errors=3, wall_clock_sec=60
    )
    policy = SimpleNamespace(name="scripted", session=lambda task: Session())
    trajectory = asyncio.run(run_episode(task, Factory(), make_protocol("bash_only"), policy, limits, deadline_sec=0.3))
    assert trajectory.termination == expected, trajectory.termination_detail
