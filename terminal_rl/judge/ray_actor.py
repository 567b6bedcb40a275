"""The run-wide judge service as a named Ray actor, so every rollout worker on every node shares
one cache, one budget, one rate limit and one active backend.

The actor runs the same :class:`JudgeService` that evaluation and calibration use in-process; its
API keys are read from the actor process's environment.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import ray

from terminal_rl.judge.service import JudgeConfig, JudgeRequest, JudgeService

NAMESPACE = "terminal_rl"


def actor_name(run_id: str) -> str:
    return f"judge-{run_id}"


@ray.remote(num_cpus=0)
class JudgeActor:
    def __init__(self, config: JudgeConfig, control_dir: str):
        self.service = JudgeService(config, Path(control_dir))

    async def judge(self, request: JudgeRequest) -> dict:
        return (await self.service.judge(request)).to_dict()

    async def judge_group(self, requests: list[JudgeRequest]) -> list[dict]:
        return [j.to_dict() for j in await self.service.judge_group(requests)]

    def metrics(self) -> dict[str, float]:
        return self.service.metrics()

    def stats(self) -> dict:
        return asdict(self.service.stats)


def start_judge_actor(config: JudgeConfig, control_dir: Path, run_id: str):
    """Create the run's judge actor, or return the existing one (every node may call this)."""
    return JudgeActor.options(
        name=actor_name(run_id), namespace=NAMESPACE, get_if_exists=True, lifetime="detached", max_concurrency=1000
    ).remote(config, str(control_dir))


def judge_actor(run_id: str):
    """The run's judge actor, from any process of the Ray cluster."""
    return ray.get_actor(actor_name(run_id), namespace=NAMESPACE)
