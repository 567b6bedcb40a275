"""Deterministic, seedable train/validation splits, stratified by difficulty."""

from __future__ import annotations

import random
from collections import defaultdict

from terminal_rl.tasks.model import Task


def split_by_difficulty(tasks: list[Task], val_fraction: float, seed: int) -> tuple[list[Task], list[Task]]:
    """Put ``round(val_fraction * n)`` tasks of each difficulty into validation.

    The result depends only on the task ids, the fraction and the seed (not on input order).

    Returns:
        (train, val), each sorted by task id.
    """
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction={val_fraction} must be in [0, 1)")
    by_difficulty: dict[str, list[Task]] = defaultdict(list)
    for task in tasks:
        by_difficulty[task.difficulty.value].append(task)
    train: list[Task] = []
    val: list[Task] = []
    for difficulty, bucket in sorted(by_difficulty.items()):
        bucket.sort(key=lambda t: t.id)
        random.Random(f"{seed}/{difficulty}").shuffle(bucket)
        n_val = round(val_fraction * len(bucket))
        val.extend(bucket[:n_val])
        train.extend(bucket[n_val:])
    return sorted(train, key=lambda t: t.id), sorted(val, key=lambda t: t.id)
