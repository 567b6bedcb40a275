"""Prepare a task set for a run: load -> validate -> report -> store -> split -> export to verl rows.

Outputs, all in the run's shared directory:
``task_store/`` (full task records), ``data/train.parquet`` and ``data/val.parquet`` (verl rows with
task references) and ``data/prepare_report.json`` (counts and every rejected task with the reason).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from terminal_rl.run_context import RunContext
from terminal_rl.tasks.model import Difficulty, Task
from terminal_rl.tasks.splits import split_by_difficulty
from terminal_rl.tasks.store import TaskStore
from terminal_rl.tasks.task_set import TaskSetConfig, validated_task_set, validation_source
from terminal_rl.tasks.validation import Problem
from terminal_rl.tasks.verl_rows import task_row, write_rows


@dataclass(frozen=True)
class PreparedTaskSet:
    train: list[Task]
    val: list[Task]
    problems: list[Problem]
    train_file: Path
    val_file: Path
    report_file: Path

    def counts(self) -> dict[str, dict[str, int]]:
        """split -> difficulty -> number of tasks (all difficulties listed, zeros included)."""
        return {
            split: {d.value: Counter(t.difficulty.value for t in tasks)[d.value] for d in Difficulty}
            for split, tasks in (("train", self.train), ("val", self.val))
        }


def train_and_val(task_set: TaskSetConfig) -> tuple[list[Task], list[Task], list[Problem]]:
    """The valid tasks of each split and every rejected task's problem. Validation is
    ``task_set.val_fraction`` of the source, or all of ``task_set.validation``'s (then every valid task
    of the source trains)."""
    report = validated_task_set(task_set)
    held_out = validation_source(task_set)
    if held_out is None:
        train, val = split_by_difficulty(report.valid, task_set.val_fraction, task_set.split_seed)
        return train, val, report.problems
    val_report = validated_task_set(held_out)
    train, val = sorted(report.valid, key=lambda t: t.id), sorted(val_report.valid, key=lambda t: t.id)
    if {t.id for t in train} & {t.id for t in val}:
        raise ValueError("task_set.validation shares task ids with the training source")
    return train, val, report.problems + val_report.problems


def prepare_task_set(task_set: TaskSetConfig, run: RunContext, agent_name: str) -> PreparedTaskSet:
    train, val, problems = train_and_val(task_set)
    store = TaskStore(run.task_store_dir)
    files = {}
    for split, tasks in (("train", train), ("val", val)):
        rows = [
            task_row(
                task,
                store.put(task),
                split=split,
                index=i,
                data_source=task_set.data_source,
                agent_name=agent_name,
                store=store,
            )
            for i, task in enumerate(tasks)
        ]
        files[split] = run.data_dir / f"{split}.parquet"
        write_rows(rows, files[split])
    prepared = PreparedTaskSet(train, val, problems, files["train"], files["val"], run.data_dir / "prepare_report.json")
    _write_report(prepared, task_set)
    return prepared


def _write_report(prepared: PreparedTaskSet, task_set: TaskSetConfig) -> None:
    tasks = prepared.train + prepared.val
    report = {
        "source": {"format": task_set.format, "path": task_set.path},
        "counts": prepared.counts(),
        "categories": dict(Counter(t.category for t in tasks).most_common()),
        "rejected": [asdict(p) for p in prepared.problems],
    }
    prepared.report_file.parent.mkdir(parents=True, exist_ok=True)
    prepared.report_file.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
