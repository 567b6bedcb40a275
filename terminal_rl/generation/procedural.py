"""Tasks from the procedural families: ``count`` tasks of one family for one seed, as our Task model.

Task ``i`` of a family draws its parameters from a generator seeded by (family, seed, i) and its
difficulty cycles through ``levels``, so the same arguments always give the same tasks and another
seed gives fresh parameters (a held-out split).
"""

from __future__ import annotations

import random

from terminal_rl.generation.families import FAMILIES
from terminal_rl.generation.families.base import DOCKERFILE
from terminal_rl.tasks.model import Difficulty, Environment, Limits, Task, VerifierKind

TEST_FILE = "test_outputs.py"


def procedural_tasks(family: str, count: int, seed: int, levels: list[str], limits: Limits) -> list[Task]:
    if family not in FAMILIES:
        raise ValueError(f"family={family!r} is not one of {sorted(FAMILIES)}")
    if not levels or any(level not in {d.value for d in Difficulty} for level in levels):
        raise ValueError(f"levels={levels!r} must be a non-empty list of {[d.value for d in Difficulty]}")
    module = FAMILIES[family]
    tasks = []
    for index in range(count):
        level = Difficulty(levels[index % len(levels)])
        drawn = module.sample(random.Random(f"{family}/{seed}/{index}"), level)
        tasks.append(Task(
            id=f"{family}-s{seed}-{index:05d}", title=drawn.title, prompt=drawn.instruction, difficulty=level,
            category=module.CATEGORY, tags=("procedural", family, *drawn.tags),
            environment=Environment(dockerfile=DOCKERFILE), tests={TEST_FILE: drawn.tests},
            verifier=VerifierKind.WEIGHTED_PYTEST, test_weights=drawn.weights,
            files={path: text.encode() for path, text in drawn.files.items()}, limits=limits,
            source=f"procedural:{family}?seed={seed}&index={index}", solution=drawn.solution,
            metadata={"family": family, "seed": str(seed)},
        ))
    return tasks
