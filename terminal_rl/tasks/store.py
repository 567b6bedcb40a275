"""The run's task store: full task records in the shared directory, addressed by (id, hash).

Dataset rows carry only a :class:`TaskRef`; a rollout fetches the task here, so a task is not
copied through the trainer with every sample. A record whose content no longer matches the hash the
row expects fails loudly instead of training on a task nobody prepared.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from terminal_rl.tasks.model import Task, task_from_json, task_to_json


class TaskHashMismatch(RuntimeError):
    """The stored task differs from what the dataset row was prepared from."""


@dataclass(frozen=True)
class TaskRef:
    task_id: str
    content_hash: str

    def __str__(self) -> str:
        return f"{self.task_id}@{self.content_hash[:12]}"


class TaskStore:
    """One JSON record per task version: ``<root>/<task_id>/<content_hash>.json``."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def put(self, task: Task) -> TaskRef:
        """Store ``task`` (idempotent; written atomically so concurrent readers never see half)."""
        ref = TaskRef(task.id, task.content_hash)
        path = self._path(ref)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, encoding="utf-8") as tmp:
                tmp.write(task_to_json(task))
            os.replace(tmp.name, path)
        return ref

    def get(self, ref: TaskRef) -> Task:
        """The task ``ref`` names; raises if it is missing or its content changed."""
        path = self._path(ref)
        if not path.is_file():
            raise FileNotFoundError(
                f"task {ref.task_id!r} (hash {ref.content_hash[:12]}) is not in the task store {self.root}; "
                "run `python -m terminal_rl.tasks` for this run"
            )
        task = task_from_json(path.read_text(encoding="utf-8"))
        if task.id != ref.task_id or task.content_hash != ref.content_hash:
            raise TaskHashMismatch(
                f"task store record {path} holds {task.id!r} with hash {task.content_hash[:12]}, but the dataset "
                f"row expects {ref.task_id!r} with hash {ref.content_hash[:12]}; the store was modified after "
                "prepare: re-run `python -m terminal_rl.tasks`"
            )
        return task

    def _path(self, ref: TaskRef) -> Path:
        return self.root / ref.task_id / f"{ref.content_hash}.json"
