"""Episodes of one or more runs: a training run's rollout logs and evaluation results, merged.

A rollout log line (``<run>/logs/rollouts/*.jsonl``, written by the agent loop) is a trajectory with
its step, group (verl's prompt uid), trained reward, components and its training samples' token ids
and masks; an evaluation line (``<run>/eval/results.jsonl``, and any ``results_files`` named) is a
trajectory scored by the tests alone. Infrastructure failures (never scored) are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from terminal_rl.agent.trajectory import Termination, Trajectory


@dataclass(frozen=True)
class Episode:
    trajectory: Trajectory
    run_id: str
    # rollout | evaluation
    origin: str
    # The training step that produced it (-1: an evaluation).
    step: int
    # Episodes of the same prompt and weights: verl's uid for rollouts, run + task for evaluations.
    group: str
    # What training optimised (rollouts) or the test score (evaluations).
    reward: float
    components: dict[str, float]
    split: str
    # Where in its file it was: with the file, a stable id.
    line: int
    file: str

    @property
    def id(self) -> str:
        return f"{self.run_id}/{self.file}#{self.line}"

    @property
    def task_id(self) -> str:
        return self.trajectory.task_id

    @property
    def score(self) -> float:
        return self.trajectory.score or 0.0


def run_episodes(run_dir: Path) -> list[Episode]:
    """Every scored episode of the run in ``run_dir`` (its rollout logs and evaluation results)."""
    episodes = []
    for path in sorted((run_dir / "logs" / "rollouts").glob("*.jsonl")):
        episodes += _read(path, run_dir, "rollout")
    if (run_dir / "eval" / "results.jsonl").is_file():
        episodes += _read(run_dir / "eval" / "results.jsonl", run_dir, "evaluation")
    return episodes


def results_episodes(paths: list[Path]) -> list[Episode]:
    """The scored episodes of evaluation results files outside any run (each file its own source)."""
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"results_files {missing} do not exist")
    return [e for path in paths for e in _read(path, path.parent, "evaluation")]


def _read(path: Path, run_dir: Path, origin: str) -> list[Episode]:
    episodes = []
    for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        trajectory = Trajectory.from_json(line)
        if trajectory.verification is None or Termination(trajectory.termination).infrastructure:
            continue
        meta = trajectory.metadata
        if origin == "rollout" and meta.get("masked"):
            continue
        rollout = origin == "rollout"
        episodes.append(
            Episode(
                trajectory,
                run_dir.name,
                origin,
                int(meta.get("global_steps", 0)) if rollout else -1,
                str(meta.get("uid")) if rollout else f"{run_dir.name}/{trajectory.task_id}",
                float(meta.get("reward", trajectory.score or 0.0)) if rollout else (trajectory.score or 0.0),
                dict(meta.get("components") or {}) if rollout else {"tests": trajectory.score or 0.0},
                str(meta.get("split", "train")) if rollout else "evaluation",
                line_number,
                path.relative_to(run_dir).as_posix() if path.is_relative_to(run_dir) else str(path),
            )
        )
    return episodes
