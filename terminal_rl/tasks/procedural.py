"""Tasks from the procedural families: ``count`` tasks of one family for one seed, as our Task model.

Draw ``i`` of a family takes its parameters from a generator seeded by (family, seed, i) and its
difficulty cycles through ``levels``, so the same arguments always give the same tasks and another
seed gives fresh parameters. A held-out split passes the training seeds as ``exclude_seeds``, the
training set's size as ``exclude_count`` and its levels as ``exclude_levels``: a draw whose instruction
and start files one of those training tasks has is skipped, so no held-out task repeats a training one
(a family whose instruction names nothing, as inbox_value's, differs in its files).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from terminal_rl.tasks.families import FAMILIES
from terminal_rl.tasks.families.base import DOCKERFILE
from terminal_rl.tasks.model import Difficulty, Environment, Limits, Task, VerifierKind

TEST_FILE = "test_outputs.py"
# Draws per requested task before giving up: a small family left with few instructions by the
# exclusion would otherwise loop for ever.
MAX_DRAWS_PER_TASK = 100


def procedural_tasks(
    family: str,
    count: int,
    seed: int,
    levels: list[str],
    limits: Limits,
    exclude_seeds: Sequence[int] = (),
    exclude_count: int | None = None,
    exclude_levels: list[str] | None = None,
) -> list[Task]:
    """``count`` tasks; ``exclude_*`` name the training tasks (default: this call's count and levels).
    Raises when the family has run out of instructions the exclusion leaves."""
    if family not in FAMILIES:
        raise ValueError(f"family={family!r} is not one of {sorted(FAMILIES)}")
    if not levels or any(level not in {d.value for d in Difficulty} for level in levels):
        raise ValueError(f"levels={levels!r} must be a non-empty list of {[d.value for d in Difficulty]}")
    if seed in exclude_seeds:
        raise ValueError(f"seed={seed} is one of exclude_seeds={list(exclude_seeds)}: it would exclude itself")
    module = FAMILIES[family]
    seen = {
        (task.prompt, tuple(sorted(task.files.items())))
        for other in exclude_seeds
        for task in procedural_tasks(family, exclude_count or count, other, exclude_levels or levels, limits)
    }
    tasks = []
    index = 0
    while len(tasks) < count:
        if index >= MAX_DRAWS_PER_TASK * count:
            raise ValueError(
                f"family {family}: {index} draws of seed {seed} gave only {len(tasks)} of {count} tasks "
                f"outside the excluded seeds {list(exclude_seeds)}: ask for fewer"
            )
        level = Difficulty(levels[len(tasks) % len(levels)])
        drawn = module.sample(random.Random(f"{family}/{seed}/{index}"), level)
        index += 1
        if (drawn.instruction, tuple(sorted((path, text.encode()) for path, text in drawn.files.items()))) in seen:
            continue
        metadata = {"family": family, "seed": str(seed)} | ({"mistake": drawn.mistake} if drawn.mistake else {})
        tasks.append(
            Task(
                id=f"{family}-s{seed}-{index - 1:05d}",
                title=drawn.title,
                prompt=drawn.instruction,
                difficulty=level,
                category=module.CATEGORY,
                tags=("procedural", family, *drawn.tags),
                environment=Environment(dockerfile=DOCKERFILE),
                tests={TEST_FILE: drawn.tests},
                verifier=VerifierKind.WEIGHTED_PYTEST,
                test_weights=drawn.weights,
                files={path: text.encode() for path, text in drawn.files.items()},
                limits=limits,
                source=f"procedural:{family}?seed={seed}&index={index - 1}",
                solution=drawn.solution,
                metadata=metadata,
            )
        )
    return tasks
