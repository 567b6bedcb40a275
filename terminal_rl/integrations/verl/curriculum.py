"""The run's curriculum inside verl: one state, owned by the trainer process (verl's TaskRunner),
where both the training dataset (which draws the next task) and the trainer (which sees each step's
results) live. Rollout workers never consult it: every row carries the stage it was drawn in, and
the reward weights follow from (stage, task difficulty) through the pure schedule.

Saved as ``curriculum.json`` in each ``global_step_N`` checkpoint folder and restored on resume.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow.parquet as pq
from omegaconf import DictConfig, OmegaConf
from verl.utils.dataset.rl_dataset import RLHFDataset

from terminal_rl.curriculum.sampler import TaskSampler
from terminal_rl.curriculum.schedule import DIFFICULTIES, CurriculumState, Schedule, schedule_from_config
from terminal_rl.filtering.periodic import PassRateTracker
from terminal_rl.filtering.keep_list import read_keep_list

STATE_FILE = "curriculum.json"


class RunCurriculum:
    """Schedule + state + sampler + (optionally) the periodic pass-rate parking of one run."""

    def __init__(self, settings: Mapping, train_file: str):
        self.schedule: Schedule = schedule_from_config(settings["curriculum"])
        self.state = CurriculumState()
        extra = pq.read_table(train_file, columns=["extra_info"]).column("extra_info").to_pylist()
        difficulties = {e["task_id"]: e["difficulty"] for e in extra}
        data_filter = settings["data_filter"]
        keep = read_keep_list(data_filter["keep_list"]) if data_filter.get("keep_list") else None
        self.sampler = TaskSampler(difficulties, seed=int(settings["seed"]), keep=keep)
        self.tracker = PassRateTracker.from_config(data_filter) if data_filter["kind"] == "periodic_pass_rate" else None

    def next_task(self) -> tuple[str, int]:
        return self.sampler.draw(self.schedule.difficulty_mix(self.state)), self.state.stage

    def record_step(self, samples: Sequence[tuple[str, int, float]]) -> None:
        """One training step's (task id, stage drawn in, test score) samples."""
        current = [score for _, stage, score in samples if stage == self.state.stage]
        if current:
            passed = sum(score == 1.0 for score in current) / len(current)
            self.state = self.schedule.advance(self.state, sum(current) / len(current), passed)
        if self.tracker is not None:
            self.sampler.parked = self.tracker.update([(task, score) for task, _, score in samples])

    def metrics(self) -> dict[str, float]:
        metrics = {"curriculum/stage": float(self.state.stage),
                   "curriculum/steps_in_stage": float(self.state.steps_in_stage),
                   "curriculum/parked_tasks": float(len(self.sampler.parked)),
                   "curriculum/pool_size": float(len(self.sampler.pool()))}
        mix = self.schedule.difficulty_mix(self.state)
        for difficulty in DIFFICULTIES:
            if mix:
                metrics[f"curriculum/share/{difficulty}"] = mix[difficulty]
            judge = self.schedule.judge_weight(self.state.stage, difficulty)
            if judge is not None:
                metrics[f"curriculum/judge_weight/{difficulty}"] = judge
        return metrics

    def save(self, folder: Path) -> None:
        data = {"state": self.state.to_dict(), "sampler": self.sampler.state(),
                "tracker": self.tracker.state() if self.tracker else None}
        (folder / STATE_FILE).write_text(json.dumps(data, indent=2), encoding="utf-8")

    def restore(self, folder: Path) -> bool:
        path = folder / STATE_FILE
        if not path.is_file():
            return False
        data = json.loads(path.read_text(encoding="utf-8"))
        self.state = CurriculumState.from_dict(data["state"])
        self.sampler.restore(data["sampler"])
        if self.tracker is not None and data["tracker"] is not None:
            self.tracker.restore(data["tracker"])
        return True


_CURRICULUM: RunCurriculum | None = None


def run_curriculum(data_config: DictConfig) -> RunCurriculum:
    """The trainer process's curriculum (created on first use from ``data.terminal_rl``)."""
    global _CURRICULUM
    if _CURRICULUM is None:
        settings = OmegaConf.to_container(data_config.terminal_rl, resolve=True)
        train_files = data_config.train_files
        _CURRICULUM = RunCurriculum(settings, train_files if isinstance(train_files, str) else train_files[0])
    return _CURRICULUM


class CurriculumDataset(RLHFDataset):
    """verl's RL dataset whose training rows are drawn by the curriculum's task sampler; the row's
    ``extra_info.curriculum_stage`` records the stage it was drawn in. Validation rows are plain."""

    def __init__(self, data_files, tokenizer, config, processor=None, max_samples: int = -1):
        super().__init__(data_files, tokenizer, config, processor, max_samples)
        self.training = _paths(data_files) == _paths(config.train_files)
        ids = [row["task_id"] for row in self.dataframe["extra_info"]]
        self.row_of = {task_id: index for index, task_id in enumerate(ids)}

    def __getitem__(self, item):
        if not self.training:
            return super().__getitem__(item)
        task_id, stage = run_curriculum(self.config).next_task()
        row = super().__getitem__(self.row_of[task_id])
        row["extra_info"] = {**row["extra_info"], "curriculum_stage": stage}
        return row


def _paths(files) -> list[str]:
    return [files] if isinstance(files, str) else [str(f) for f in files]
