"""Tasks from the procedural families: ``count`` tasks of one family for one seed, as our Task model.

Draw ``i`` of a family takes its parameters from a generator seeded by (family, seed, i) and its
difficulty cycles through ``levels``, so the same arguments always give the same tasks and another
seed gives fresh parameters. A held-out split passes the training seeds as ``exclude_seeds`` and the
training set's size as ``exclude_count``: a draw whose instruction one of those seeds' first
``exclude_count`` draws has, at any level, is skipped, so no held-out task repeats a training one
whatever levels either set cycles through.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from terminal_rl.generation.families import FAMILIES
from terminal_rl.generation.families.base import DOCKERFILE
from terminal_rl.tasks.model import Difficulty, Environment, Limits, Task, VerifierKind

TEST_FILE = "test_outputs.py"


def procedural_tasks(family: str, count: int, seed: int, levels: list[str], limits: Limits,
                     exclude_seeds: Sequence[int] = (), exclude_count: int | None = None) -> list[Task]:
    if family not in FAMILIES:
        raise ValueError(f"family={family!r} is not one of {sorted(FAMILIES)}")
    if not levels or any(level not in {d.value for d in Difficulty} for level in levels):
        raise ValueError(f"levels={levels!r} must be a non-empty list of {[d.value for d in Difficulty]}")
    if seed in exclude_seeds:
        raise ValueError(f"seed={seed} is one of exclude_seeds={list(exclude_seeds)}: it would exclude itself")
    module = FAMILIES[family]
    seen = {module.sample(random.Random(f"{family}/{other}/{index}"), level).instruction
            for other in exclude_seeds for index in range(exclude_count or count) for level in Difficulty}
    tasks = []
    index = 0
    while len(tasks) < count:
        level = Difficulty(levels[len(tasks) % len(levels)])
        drawn = module.sample(random.Random(f"{family}/{seed}/{index}"), level)
        index += 1
        if drawn.instruction in seen:
            continue
        metadata = {"family": family, "seed": str(seed)} | ({"mistake": drawn.mistake} if drawn.mistake else {})
        tasks.append(Task(
            id=f"{family}-s{seed}-{index - 1:05d}", title=drawn.title, prompt=drawn.instruction, difficulty=level,
            category=module.CATEGORY, tags=("procedural", family, *drawn.tags),
            environment=Environment(dockerfile=DOCKERFILE), tests={TEST_FILE: drawn.tests},
            verifier=VerifierKind.WEIGHTED_PYTEST, test_weights=drawn.weights,
            files={path: text.encode() for path, text in drawn.files.items()}, limits=limits,
            source=f"procedural:{family}?seed={seed}&index={index - 1}", solution=drawn.solution,
            metadata=metadata,
        ))
    return tasks
