"""Checkpoint retention on disk: verl keeps ``trainer.max_actor_ckpt_to_keep`` by a list held in the
worker's memory (``utils/checkpoint/checkpoint_manager.py`` l. 166-194), so a resumed or requeued run
never deletes what an earlier attempt saved. After each save the trainer removes every
``global_step_N`` folder beyond the newest ``keep`` (the one verl's marker names is always kept)."""

from __future__ import annotations

import shutil
from pathlib import Path


def saved_steps(folder: Path) -> list[int]:
    """Steps with a checkpoint folder under ``folder``, oldest first."""
    steps = []
    for path in folder.glob("global_step_*"):
        suffix = path.name.removeprefix("global_step_")
        if path.is_dir() and suffix.isdigit():
            steps.append(int(suffix))
    return sorted(steps)


def stale_steps(steps: list[int], keep: int | None, latest: int | None) -> list[int]:
    """The steps beyond the newest ``keep`` (None or below 1: keep all); never ``latest``."""
    if keep is None or keep < 1:
        return []
    return [step for step in sorted(steps)[:-keep] if step != latest]


def enforce_retention(folder: Path, keep: int | None) -> list[int]:
    """Remove the stale checkpoint folders; returns their steps."""
    marker = folder / "latest_checkpointed_iteration.txt"
    latest = int(marker.read_text().strip()) if marker.is_file() else None
    removed = stale_steps(saved_steps(folder), keep, latest)
    for step in removed:
        shutil.rmtree(folder / f"global_step_{step}", ignore_errors=True)
    return removed
