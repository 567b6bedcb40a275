"""The run's curriculum inside verl: one state, owned by the trainer process (verl's TaskRunner),
where both the training dataset (which draws the next task) and the trainer (which sees each step's
results) live. Rollout workers never consult it: every row carries the stage it was drawn in, and
the reward weights follow from (stage, task difficulty) through the pure schedule.

Saved as ``curriculum.json`` in each ``global_step_N`` checkpoint folder and restored on resume.
Tasks whose image does not build here (the run's image report) are out of the sampling pool and out
of the validation rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyarrow.parquet as pq
from omegaconf import DictConfig, OmegaConf
from verl.utils.dataset.rl_dataset import RLHFDataset

from terminal_rl.curriculum.sampler import TaskSampler
from terminal_rl.curriculum.schedule import DIFFICULTIES, CurriculumState, Schedule, run_steps, schedule_from_config
from terminal_rl.filtering.keep_list import read_keep_list
from terminal_rl.filtering.periodic import PassRateTracker
from terminal_rl.sandbox.images.build_report import failed_tasks

STATE_FILE = "curriculum.json"


class RunCurriculum:
    """Schedule + state + sampler + (optionally) the periodic pass-rate parking of one run."""

    def __init__(self, settings: Mapping, train_file: str):
        extra = pq.read_table(train_file, columns=["extra_info"]).column("extra_info").to_pylist()
        self.schedule: Schedule = schedule_from_config(settings["curriculum"], total_steps(settings, len(extra)))
        self.state = CurriculumState()
        difficulties = {e["task_id"]: e["difficulty"] for e in extra}
        data_filter = settings["data_filter"]
        keep = read_keep_list(data_filter["keep_list"]) if data_filter.get("keep_list") else None
        self.sampler = TaskSampler(difficulties, seed=int(settings["seed"]), keep=keep)
        self.tracker = PassRateTracker.from_config(data_filter) if data_filter["kind"] == "periodic_pass_rate" else None
        self.image_report = Path(settings["image_report"])
        self.refresh_unavailable()
        # What the advancement gate read at the last step: (mean test score, pass rate).
        self.gate_scores: tuple[float, float] | None = None

    def refresh_unavailable(self) -> None:
        """Re-read which tasks' images do not build (the report grows while images build)."""
        self.sampler.unavailable = frozenset(failed_tasks(self.image_report))

    def next_task(self) -> tuple[str, int]:
        return self.sampler.draw(self.schedule.difficulty_mix(self.state)), self.state.stage

    def record_step(self, samples: Sequence[tuple[str, int, float]]) -> None:
        """One training step's (task id, stage drawn in, test score) samples."""
        self.refresh_unavailable()
        current = [score for _, stage, score in samples if stage == self.state.stage]
        self.gate_scores = (
            (sum(current) / len(current), sum(s == 1.0 for s in current) / len(current)) if current else None
        )
        self.state = self.schedule.advance(self.state, *(self.gate_scores or (None, None)))
        if self.tracker is not None:
            self.sampler.parked = self.tracker.update([(task, score) for task, _, score in samples])

    def metrics(self) -> dict[str, float]:
        """The schedule after the last recorded step (the state the next step draws in)."""
        metrics = {
            "curriculum/stage": float(self.state.stage),
            "curriculum/steps_in_stage": float(self.state.steps_in_stage),
            "curriculum/parked_tasks": float(len(self.sampler.parked)),
            "curriculum/unavailable_tasks": float(len(self.sampler.unavailable)),
            **(
                {"curriculum/gate_test_score": self.gate_scores[0], "curriculum/gate_pass_rate": self.gate_scores[1]}
                if self.gate_scores
                else {}
            ),
            "curriculum/pool_size": float(len(self.sampler.pool())),
        }
        mix = self.schedule.difficulty_mix(self.state)
        for difficulty in DIFFICULTIES:
            if mix:
                metrics[f"curriculum/share/{difficulty}"] = mix[difficulty]
            judge = self.schedule.judge_weight(self.state.stage, difficulty)
            if judge is not None:
                metrics[f"curriculum/judge_weight/{difficulty}"] = judge
        return metrics

    def save(self, folder: Path) -> None:
        data = {
            "state": self.state.to_dict(),
            "sampler": self.sampler.state(),
            "tracker": self.tracker.state() if self.tracker else None,
        }
        (folder / STATE_FILE).write_text(json.dumps(data, indent=2), encoding="utf-8")

    def restore(self, folder: Path) -> None:
        """Load the state saved with checkpoint ``folder``; a checkpoint without it cannot resume."""
        path = folder / STATE_FILE
        if not path.is_file():
            raise FileNotFoundError(
                f"checkpoint {folder} has no {STATE_FILE}: its curriculum state (stage, sampler draws, parked "
                "tasks) is lost, so resuming would restart the curriculum. Resume from another checkpoint "
                "(trainer.resume_mode=resume_path trainer.resume_from_path=...) or start a new run."
            )
        data = json.loads(path.read_text(encoding="utf-8"))
        self.state = CurriculumState.from_dict(data["state"])
        self.sampler.restore(data["sampler"])
        if self.tracker is not None and data["tracker"] is not None:
            self.tracker.restore(data["tracker"])


def total_steps(settings: Mapping, train_rows: int) -> int:
    """The run's training steps from ``data.terminal_rl`` and the number of training rows."""
    return run_steps(
        train_rows, int(settings["train_batch_size"]), int(settings["total_epochs"]), settings["total_training_steps"]
    )


def run_schedule(data_config: DictConfig) -> tuple[Schedule, int]:
    """The run's schedule and its training steps, from ``data.terminal_rl`` and the training rows."""
    settings = OmegaConf.to_container(data_config.terminal_rl, resolve=True)
    steps = total_steps(settings, pq.read_metadata(_paths(data_config.train_files)[0]).num_rows)
    return schedule_from_config(settings["curriculum"], steps), steps


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
    ``extra_info.curriculum_stage`` records the stage it was drawn in. Validation rows are the first
    ``data.val_max_samples`` rows (all when -1) whose image builds, in file order, so the run knows
    before step 1 which images validation needs (``terminal_rl/training/run_images.py``)."""

    def __init__(self, data_files, tokenizer, config, processor=None, max_samples: int = -1):
        self.training = _paths(data_files) == _paths(config.train_files)
        super().__init__(data_files, tokenizer, config, processor, max_samples if self.training else -1)
        if not self.training:
            self.dataframe = self.dataframe.select(
                validation_rows(
                    [row["task_id"] for row in self.dataframe["extra_info"]],
                    failed_tasks(Path(config.terminal_rl.image_report)),
                    max_samples,
                )
            )
        ids = [row["task_id"] for row in self.dataframe["extra_info"]]
        self.row_of = {task_id: index for index, task_id in enumerate(ids)}

    def __getitem__(self, item):
        if not self.training:
            return super().__getitem__(item)
        task_id, stage = run_curriculum(self.config).next_task()
        row = super().__getitem__(self.row_of[task_id])
        row["extra_info"] = {**row["extra_info"], "curriculum_stage": stage}
        return row


def validation_rows(task_ids: list[str], unavailable, max_samples: int) -> list[int]:
    """Indices of the validation rows a run uses: those whose image builds, the first ``max_samples``
    of them (all when ``max_samples`` < 0)."""
    rows = [i for i, task_id in enumerate(task_ids) if task_id not in unavailable]
    return rows if max_samples < 0 else rows[:max_samples]


def _paths(files) -> list[str]:
    return [files] if isinstance(files, str) else [str(f) for f in files]
