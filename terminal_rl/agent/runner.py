"""Run one episode end to end: sandbox up, policy and episode in turn, verify, sandbox removed.

The container is removed before this returns, so nothing downstream (the judge) holds one.
"""

from __future__ import annotations

import time

from terminal_rl.agent.episode import INFRASTRUCTURE_ERRORS, Episode, EpisodeLimits
from terminal_rl.agent.policies.base import Policy, PolicyError
from terminal_rl.agent.protocols.base import ActionProtocol
from terminal_rl.agent.trajectory import Termination, Trajectory
from terminal_rl.sandbox.sandbox import SandboxFactory
from terminal_rl.sandbox.verifier import verify
from terminal_rl.tasks.model import Task


async def run_episode(task: Task, factory: SandboxFactory, protocol: ActionProtocol, policy: Policy,
                      limits: EpisodeLimits, rollout_id: str = "") -> Trajectory:
    trajectory = Trajectory(task.id, task.content_hash, protocol.prompt_id, policy.name, started_at=time.time())
    try:
        async with factory.task_sandbox(task, rollout_id) as sandbox:
            episode = Episode(task, sandbox, protocol, limits, policy.name)
            trajectory = episode.trajectory
            messages = await episode.start()
            session = policy.session(task)
            context_tokens = 0
            while not episode.done:
                max_tokens = episode.turn_max_tokens(context_tokens)
                if max_tokens <= 0:
                    episode.end(Termination.CONTEXT_EXHAUSTED, f"{context_tokens} tokens in context")
                    break
                try:
                    reply = await session.reply(messages, max_tokens)
                except PolicyError as error:
                    episode.end(Termination.POLICY_ERROR, str(error))
                    break
                context_tokens = reply.context_tokens or context_tokens
                outcome = await episode.step(reply.text, context_tokens=reply.context_tokens,
                                             completion_tokens=reply.completion_tokens)
                if outcome.observation is not None:
                    messages = [*messages, {"role": "assistant", "content": reply.text}, outcome.observation]
                trajectory.metadata["cost_usd"] = trajectory.metadata.get("cost_usd", 0.0) + reply.cost_usd
            if not Termination(trajectory.termination).infrastructure:
                trajectory.verification = (await verify(sandbox, task)).to_dict()
    except INFRASTRUCTURE_ERRORS as error:
        trajectory.termination = Termination.SANDBOX_ERROR.value
        trajectory.termination_detail = f"{type(error).__name__}: {error}"
    trajectory.duration_sec = time.time() - trajectory.started_at
    return trajectory
