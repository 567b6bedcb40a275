"""Curriculum schedules: pure objects, metrics in -> weights out, tested in milliseconds.

A schedule is a list of stages. Each stage has sampling weights over difficulty levels and a judge
weight *per task difficulty* (so it is constant within a GRPO group, whose samples share a task); the
reward mix of a sample is {judge: j, tests: 1 - j} for its difficulty at the stage it was drawn in, or
the run's fixed ``reward_mix`` when the stage sets no judge weights. A stage ends after ``max_steps``
steps, or earlier when ``advance_at`` is met: the mean test score (or pass rate) of the last
``window`` steps of the stage reaches the threshold (and at least ``min_steps`` steps were spent).
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

    def advance(self, state: CurriculumState, test_score: float, pass_rate: float) -> CurriculumState:
        """The state after one more training step with these metrics (on this stage's samples)."""
        stage = self.stages[state.stage]
        recent = state.recent + ((test_score, pass_rate),)
        steps = state.steps_in_stage + 1
        last = state.stage == len(self.stages) - 1
        if not last and (self._gate_met(stage, recent, steps) or (stage.max_steps and steps >= stage.max_steps)):
            return CurriculumState(state.stage + 1, 0, ())
        keep = stage.advance_at.window if stage.advance_at else 0
        return replace(state, steps_in_stage=steps, recent=recent[-keep:] if keep else ())

    @staticmethod
    def _gate_met(stage: Stage, recent: tuple[tuple[float, float], ...], steps: int) -> bool:
        gate = stage.advance_at
        if gate is None or steps < max(stage.min_steps, gate.window):
            return False
        column = 0 if gate.metric == "test_score" else 1
        window = [r[column] for r in recent[-gate.window:]]
        return sum(window) / len(window) >= gate.threshold


def schedule_from_config(node: Mapping[str, Any]) -> Schedule:
    """Build a schedule from the ``curriculum`` config group (kinds: none, staged, linear)."""
    kind = node["kind"]
    if kind == "none":
        return Schedule([Stage("all", {})])
    if kind == "linear":
        start, end, stages, steps = node["start"], node["end"], int(node["stages"]), int(node["steps"])
        return Schedule([
            Stage(f"step{k * steps // stages}",
                  {d: (1 - k / (stages - 1)) * start.get(d, 0.0) + k / (stages - 1) * end.get(d, 0.0) for d in DIFFICULTIES},
                  max_steps=steps // stages if k < stages - 1 else 0)
            for k in range(stages)
        ])
    if kind == "staged":
        return Schedule([
            Stage(s["name"], dict(s["difficulty_weights"]), dict(s.get("judge_weights", {})), int(s.get("max_steps", 0)),
                  int(s.get("min_steps", 0)), Gate(**s["advance_at"]) if s.get("advance_at") else None)
            for s in node["stages"]
        ])
    raise ValueError(f"curriculum.kind={kind!r} is not one of none, staged, linear")
