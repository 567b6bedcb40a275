"""Curriculum schedules: pure objects, metrics in -> weights out, tested in milliseconds.

A schedule is a list of stages. Each stage has sampling weights over difficulty levels and a judge
weight *per task difficulty* (so it is constant within a GRPO group, whose samples share a task); the
reward mix of a sample is {judge: j, tests: 1 - j} for its difficulty at the stage it was drawn in, or
the run's fixed ``reward_mix`` when the stage sets no judge weights. A stage ends after ``max_steps``
steps, or earlier when ``advance_at`` is met: the mean test score (or pass rate) of the last
``window`` steps of the stage reaches the threshold (and at least ``min_steps`` steps were spent).

Stage lengths are configured as ``fraction`` of the run's total training steps (``run_steps``), so a
schedule fits whatever run uses it: ``judge_anneal`` reaches its tests-only stage in a 180-step run
as in a 1,650-step one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

DIFFICULTIES = ("easy", "medium", "hard", "extremely_hard")


@dataclass(frozen=True)
class Gate:
    metric: str  # "test_score" | "pass_rate"
    threshold: float
    window: int


@dataclass(frozen=True)
class Stage:
    name: str
    # Sampling weights over difficulties; empty means uniform over the tasks themselves.
    difficulty_weights: dict[str, float]
    # Judge weight per task difficulty; empty means "use the run's reward_mix".
    judge_weights: dict[str, float] = field(default_factory=dict)
    max_steps: int = 0  # 0: no limit (the last stage)
    min_steps: int = 0
    advance_at: Gate | None = None


@dataclass(frozen=True)
class CurriculumState:
    """Everything a resume needs: stage index, steps spent in it, the stage's recent metrics."""

    stage: int = 0
    steps_in_stage: int = 0
    recent: tuple[tuple[float, float], ...] = ()  # (mean test score, pass rate) per step of this stage

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CurriculumState:
        return cls(data["stage"], data["steps_in_stage"], tuple(tuple(r) for r in data["recent"]))


class Schedule:
    def __init__(self, stages: Sequence[Stage]):
        if not stages:
            raise ValueError("a curriculum needs at least one stage")
        for stage in stages:
            unknown = (set(stage.difficulty_weights) | set(stage.judge_weights)) - set(DIFFICULTIES)
            if unknown:
                raise ValueError(f"stage {stage.name!r}: unknown difficulty in {sorted(unknown)}")
            weights = stage.difficulty_weights.values()
            if weights and (sum(weights) <= 0 or min(weights) < 0):
                raise ValueError(f"stage {stage.name!r}: difficulty weights must be >= 0 with a positive sum")
            if any(not 0 <= w <= 1 for w in stage.judge_weights.values()):
                raise ValueError(f"stage {stage.name!r}: judge weights must be in [0, 1]")
        self.stages = list(stages)

    @property
    def anneals_judge(self) -> bool:
        return any(stage.judge_weights for stage in self.stages)

    def difficulty_mix(self, state: CurriculumState) -> dict[str, float]:
        """Sampling shares over difficulties (normalised, all four levels); empty: uniform over tasks."""
        weights = self.stages[state.stage].difficulty_weights
        if not weights:
            return {}
        total = sum(weights.values())
        return {d: weights.get(d, 0.0) / total for d in DIFFICULTIES}

    def judge_weight(self, stage: int, difficulty: str) -> float | None:
        """The judge weight for a task of ``difficulty`` drawn at ``stage``; None: the run's mix."""
        judge = self.stages[stage].judge_weights
        return judge.get(difficulty, 0.0) if judge else None

    def reward_weights(self, stage: int, difficulty: str, fixed: Mapping[str, float]) -> dict[str, float]:
        judge = self.judge_weight(stage, difficulty)
        if judge is None:
            return dict(fixed)
        return {"tests": 1.0 - judge, "judge": judge}

    def advance(self, state: CurriculumState, test_score: float | None, pass_rate: float | None) -> CurriculumState:
        """The state after one more training step with these metrics (on this stage's samples). A step
        with no scored sample of the stage (every group masked) still counts towards ``max_steps``,
        but not towards the gate's window."""
        stage = self.stages[state.stage]
        scored = test_score is not None and pass_rate is not None
        recent = state.recent + (((test_score, pass_rate),) if scored else ())
        steps = state.steps_in_stage + 1
        last = state.stage == len(self.stages) - 1
        gate = scored and self._gate_met(stage, recent, steps)
        if not last and (gate or (stage.max_steps and steps >= stage.max_steps)):
            return CurriculumState(state.stage + 1, 0, ())
        keep = stage.advance_at.window if stage.advance_at else 0
        return replace(state, steps_in_stage=steps, recent=recent[-keep:] if keep else ())

    @staticmethod
    def _gate_met(stage: Stage, recent: tuple[tuple[float, float], ...], steps: int) -> bool:
        gate = stage.advance_at
        if gate is None or steps < max(stage.min_steps, gate.window):
            return False
        column = 0 if gate.metric == "test_score" else 1
        window = [r[column] for r in recent[-gate.window :]]
        return sum(window) / len(window) >= gate.threshold


def run_steps(train_rows: int, train_batch_size: int, total_epochs: int, total_training_steps: int | None) -> int:
    """The steps verl trains: ``trainer.total_training_steps`` when set, else (train rows //
    train_batch_size) x total_epochs (verl 0.9.1, ``trainer/ppo/v1/trainer_base.py`` l. 765-771)."""
    if total_training_steps is not None:
        return int(total_training_steps)
    return train_rows // train_batch_size * total_epochs


def stage_steps(fraction: float, total_steps: int) -> int:
    """A stage's maximum length: its fraction of the run, at least one step."""
    if not 0 < fraction < 1:
        raise ValueError(f"a stage's fraction must be in (0, 1), got {fraction}")
    return max(1, round(fraction * total_steps))


def schedule_from_config(node: Mapping[str, Any], total_steps: int) -> Schedule:
    """Build a schedule for a run of ``total_steps`` from the ``curriculum`` config group (kinds:
    none, staged, linear); every stage but the last ends after its ``fraction`` of the run."""
    kind = node["kind"]
    if kind == "none":
        return Schedule([Stage("all", {})])
    if kind == "linear":
        start, end, stages = node["start"], node["end"], int(node["stages"])
        length = max(1, total_steps // stages)
        return Schedule(
            [
                Stage(
                    f"step{k * length}",
                    {
                        d: (1 - k / (stages - 1)) * start.get(d, 0.0) + k / (stages - 1) * end.get(d, 0.0)
                        for d in DIFFICULTIES
                    },
                    max_steps=length if k < stages - 1 else 0,
                )
                for k in range(stages)
            ]
        )
    if kind == "staged":
        stages, last = node["stages"], len(node["stages"]) - 1
        for index, stage in enumerate(stages):
            if (index < last) != ("fraction" in stage):
                raise ValueError(
                    f"curriculum stage {stage['name']!r}: every stage but the last needs a fraction of "
                    "the run's steps (the last runs to the end)"
                )
        return Schedule(
            [
                Stage(
                    s["name"],
                    dict(s["difficulty_weights"]),
                    dict(s.get("judge_weights", {})),
                    stage_steps(s["fraction"], total_steps) if "fraction" in s else 0,
                    int(s.get("min_steps", 0)),
                    Gate(**s["advance_at"]) if s.get("advance_at") else None,
                )
                for s in stages
            ]
        )
    raise ValueError(f"curriculum.kind={kind!r} is not one of none, staged, linear")


def judge_free_from(schedule: Schedule) -> int | None:
    """The step at which the reward is tests-only for every difficulty for good, when each stage runs
    its full length (gates can only bring it earlier); None if the judge never reaches 0."""
    start = 0
    for index, stage in enumerate(schedule.stages):
        later = schedule.stages[index:]
        if all(all(w == 0 for w in s.judge_weights.values()) for s in later) and all(s.judge_weights for s in later):
            return start
        start += stage.max_steps
    return None
