"""Run one episode end to end: sandbox up, policy and episode in turn, verify, sandbox removed. The one
episode driver of evaluation, filtering and training (verl's agent loop calls it too).

The container is removed before this returns, so nothing downstream (the judge) holds one. Nothing
escapes: every failure ends the episode with a termination, so a caller waiting on a group of
episodes never waits forever. The model server's failures are ``policy_error``; everything else that
goes wrong (the sandbox, the verifier, the engine, a bug) is ``sandbox_error``; a run past its
deadline is ``sandbox_error`` too. Both are infrastructure failures: never scored, masked in training.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from terminal_rl.agent.context import ContextView
from terminal_rl.agent.episode import Episode, EpisodeLimits
from terminal_rl.agent.policies.base import ContextExhausted, Policy, PolicyError
from terminal_rl.agent.protocols.base import ActionProtocol
from terminal_rl.agent.trajectory import Termination, Trajectory
from terminal_rl.sandbox.runtime.sandbox import SandboxFactory
from terminal_rl.sandbox.verify.verifier import verify
from terminal_rl.tasks.model import Limits, Task

log = logging.getLogger(__name__)
# The shortest wait before a deadline extended by a generation pause is checked again (s).
RECHECK_SEC = 1.0


def episode_deadline_sec(limits: Limits, grace_sec: float) -> float:
    """The longest an episode under ``limits`` may take: building its image, the agent's budget, the
    verifier's, plus a grace."""
    return limits.build_timeout_sec + limits.agent_timeout_sec + limits.verifier_timeout_sec + grace_sec


async def run_episode(
    task: Task,
    factory: SandboxFactory,
    protocol: ActionProtocol,
    policy: Policy,
    limits: EpisodeLimits,
    rollout_id: str = "",
    deadline_sec: float | None = None,
    paused_sec: Callable[[], Awaitable[float]] | None = None,
) -> Trajectory:
    """``paused_sec()``: seconds the episode's model calls have so far waited for generation to resume
    (async training); neither the agent's wall-clock budget nor the deadline counts them. The deadline
    leaves out the wait for the node's sandbox slot too: more episodes than slots (a step's beyond the
    node's cap, or the batches prefetched in async training) queue for one, and must not time out
    for it."""
    started = time.time()
    record = Trajectory(task.id, task.content_hash, protocol.prompt_id, policy.name, started_at=started)
    holder = [record]  # the episode's own record, once it exists
    deadline = deadline_sec or episode_deadline_sec(task.limits, factory.config.container.grace_sec)
    queued, slot_held = time.monotonic(), []

    async def left_out() -> float:
        waited = (slot_held[0] if slot_held else time.monotonic()) - queued
        return waited + (await paused_sec() if paused_sec is not None else 0.0)

    def on_slot() -> None:
        slot_held.append(time.monotonic())

    try:
        await within_deadline(
            _run(task, factory, protocol, policy, limits, rollout_id, holder, paused_sec, on_slot), deadline, left_out
        )
    except TimeoutError:
        _fail(holder[0], Termination.SANDBOX_ERROR, f"episode exceeded its deadline of {deadline:.0f}s")
    except PolicyError as error:
        _fail(holder[0], Termination.POLICY_ERROR, str(error))
    except Exception as error:  # anything else: the environment failed, never the agent
        log.warning("episode of %s failed", task.id, exc_info=True)
        _fail(holder[0], Termination.SANDBOX_ERROR, f"{type(error).__name__}: {error}")
    trajectory = holder[0]
    trajectory.duration_sec = time.time() - started
    return trajectory


async def within_deadline(work: Awaitable, deadline_sec: float, paused_sec: Callable[[], Awaitable[float]] | None):
    """``asyncio.wait_for(work, deadline_sec)``, less the paused seconds: at the deadline, the time paused
    so far is added and the wait goes on (checked again at least a second later: during a pause the
    time left stays about the same); TimeoutError once the unpaused time reaches the deadline."""
    task = asyncio.ensure_future(work)
    started = time.monotonic()
    first = True
    try:
        while True:
            paused = await paused_sec() if paused_sec is not None else 0.0
            remaining = started + deadline_sec + paused - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            done, _ = await asyncio.wait({task}, timeout=remaining if first else max(remaining, RECHECK_SEC))
            first = False
            if done:
                return task.result()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def _run(
    task: Task,
    factory: SandboxFactory,
    protocol: ActionProtocol,
    policy: Policy,
    limits: EpisodeLimits,
    rollout_id: str,
    holder: list[Trajectory],
    paused_sec: Callable[[], Awaitable[float]] | None,
    on_slot: Callable[[], None],
) -> None:
    async with factory.task_sandbox(task, rollout_id, on_slot) as sandbox:
        episode = Episode(task, sandbox, protocol, limits, policy.name)
        holder[0] = trajectory = episode.trajectory
        view = ContextView(limits.context, await episode.start())
        trajectory.metadata["context"] = view.record()  # kept if a deadline cuts the episode short
        session = policy.session(task)
        context_tokens = 0
        while not episode.done:
            max_tokens = episode.turn_max_tokens(context_tokens)
            if max_tokens <= 0:
                episode.end(Termination.CONTEXT_EXHAUSTED, f"{context_tokens} tokens in context")
                break
            summary = view.summary_due(context_tokens, limits.max_context_tokens)
            shown = [*view.messages, view.summary_request()] if summary else view.messages
            if summary:
                max_tokens = min(max_tokens, limits.context.summary_max_tokens)
            try:
                reply = await session.reply(shown, max_tokens)
            except ContextExhausted as error:
                episode.end(Termination.CONTEXT_EXHAUSTED, str(error))
                trajectory.metadata["cost_usd"] = trajectory.metadata.get("cost_usd", 0.0) + error.cost_usd
                break
            except PolicyError as error:
                episode.end(Termination.POLICY_ERROR, str(error))
                break
            trajectory.metadata["cost_usd"] = trajectory.metadata.get("cost_usd", 0.0) + reply.cost_usd
            if paused_sec is not None:
                episode.leave_out(await paused_sec())
            if summary:  # the transcript keeps the request and the summary; the model continues from it
                trajectory.messages += [shown[-1], {"role": "assistant", "content": reply.text}]
                view.handoff(reply.text)
                context_tokens = 0  # unknown until the next reply; far below the budget now
                continue
            context_tokens = reply.context_tokens or context_tokens
            outcome = await episode.step(
                reply.text, context_tokens=reply.context_tokens, completion_tokens=reply.completion_tokens
            )
            view.observe(reply.text, outcome.observation, trajectory.turns[-1].actions)
        trajectory.metadata["context"] = view.record()
        if not Termination(trajectory.termination).infrastructure:
            trajectory.verification = (await verify(sandbox, task)).to_dict()


def _fail(trajectory: Trajectory, reason: Termination, detail: str) -> None:
    trajectory.termination, trajectory.termination_detail = reason.value, detail
    trajectory.verification = None
