"""What the agent loop knows of a rollout beyond its trajectory: its group, split and step, the reward
weights in force, and what the judge is told of the task. Handed to the group's scoring (through the
barrier), the judge and the step's bookkeeping on the trajectory itself, in ``trajectory.metadata``
(so the rollout log keeps it) under this dataclass's field names, written and read only here."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from terminal_rl.agent.trajectory import Trajectory
from terminal_rl.rewards.mix import RewardMix


@dataclass(frozen=True)
class RolloutContext:
    task_id: str
    uid: str  # the GRPO group's id (verl's)
    session: int  # the rollout's index in its group
    split: str  # train | val
    global_steps: int  # verl's step the rollout was drawn for
    stage: int  # the curriculum stage it was drawn in
    reward_mix: RewardMix
    task_prompt: str = ""  # for the judge ("" when the task did not load)
    environment: str = ""  # the judge's description of the task's environment

    def stamp(self, trajectory: Trajectory) -> None:
        trajectory.metadata.update({**asdict(self), "reward_mix": self.reward_mix})

    @classmethod
    def of(cls, trajectory: Trajectory) -> RolloutContext:
        return cls(**{f.name: trajectory.metadata[f.name] for f in fields(cls)})
