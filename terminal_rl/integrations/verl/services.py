"""Run-wide services the rollout workers talk to: the judge, the step ledger and the record of
generation pauses (named Ray actors started by the driver), and the reward weights in force for a
sample (from the curriculum state, when there is one)."""

from __future__ import annotations

from omegaconf import DictConfig

from terminal_rl.agent.trajectory import Trajectory
from terminal_rl.curriculum.schedule import Schedule
from terminal_rl.judge.ray_actor import NAMESPACE, judge_actor
from terminal_rl.judge.render import describe_environment, render_trajectory
from terminal_rl.judge.service import JudgeConfig, JudgeRequest
from terminal_rl.rewards.mix import RewardMix
from terminal_rl.tasks.model import Task
from terminal_rl.training.generation_pauses import GenerationPauses
from terminal_rl.training.group_scoring import JudgeGroup
from terminal_rl.training.rollout_context import RolloutContext
from terminal_rl.training.step_ledger import StepLedger


def reward_mix_for(
    schedule: Schedule, reward_mix: DictConfig, difficulty: str, stage: int, validating: bool
) -> RewardMix:
    """The reward weights a sample is scored with: the schedule's for (the stage it was drawn in, its
    task's difficulty), or the run's fixed mix (the ``reward_mix`` section); validation scores tests
    only (it reports test scores)."""
    if validating:
        return RewardMix({"tests": 1.0})
    weights = schedule.reward_weights(stage, difficulty, dict(reward_mix.weights))
    return RewardMix(weights, reward_mix.missing)


def judge_group_via_actor(judge_config: JudgeConfig, run_id: str) -> JudgeGroup:
    """Ask the run's judge actor to grade a group (the containers are already gone)."""

    async def judge(trajectories: list[Trajectory]) -> list[dict]:
        requests = [
            JudgeRequest(
                RolloutContext.of(t).task_prompt,
                RolloutContext.of(t).environment,
                render_trajectory(t, judge_config.max_model_chars, judge_config.max_observation_chars),
            )
            for t in trajectories
        ]
        return await judge_actor(run_id).judge_group.remote(requests)

    return judge


def judge_context(task: Task) -> dict[str, str]:
    """What the judge needs to know of the task (``RolloutContext`` fields), stamped on the trajectory
    before the barrier."""
    return {"task_prompt": task.prompt, "environment": describe_environment(task)}


def start_ledger(run_id: str, max_refills: int):
    """Create the run's step ledger (``terminal_rl.training.step_ledger``), or return the existing one."""
    import ray

    actor = ray.remote(num_cpus=0)(StepLedger)
    return actor.options(name=f"ledger-{run_id}", namespace=NAMESPACE, get_if_exists=True, lifetime="detached").remote(
        max_refills
    )


def ledger(run_id: str):
    """The run's step ledger actor, from any process of the Ray cluster."""
    import ray

    return ray.get_actor(f"ledger-{run_id}", namespace=NAMESPACE)


def start_generation_pauses(run_id: str):
    """Create the run's record of generation pauses (``terminal_rl.training.generation_pauses``)."""
    import ray

    actor = ray.remote(num_cpus=0)(GenerationPauses)
    return actor.options(name=f"pauses-{run_id}", namespace=NAMESPACE, get_if_exists=True, lifetime="detached").remote()


def generation_pauses(run_id: str):
    """The run's record of generation pauses, from any process of the Ray cluster."""
    import ray

    return ray.get_actor(f"pauses-{run_id}", namespace=NAMESPACE)


def service_metrics(run_id: str) -> dict[str, float]:
    """judge/* figures from the run's judge actor, when the run has one."""
    import ray

    try:
        actor = judge_actor(run_id)
    except ValueError:
        return {}
    return ray.get(actor.metrics.remote())
