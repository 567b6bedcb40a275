"""write_value's tasks whose check takes a while: before its tests run, the task's test module waits a
time drawn per task from a lognormal distribution (median 8 s, sigma 1: 90% under 29 s, 1% over 82 s).

Terminal episodes are long-tailed: most end in a few turns, a few compile, install or run a test suite
for minutes (SkyRL and ThunderAgent measure the tail; it is why the peers train asynchronously). A
lognormal is the usual model of such task durations: most short, a tail of long ones. The wait is in
the check, not in the agent's commands, so every episode has its share whatever the model writes; the
asynchronous-rollouts benchmark (``benchmarks/async_rollouts.py``) runs on it.
"""

from __future__ import annotations

import math
import random

from terminal_rl.tasks.families import write_value
from terminal_rl.tasks.families.base import FamilyTask
from terminal_rl.tasks.model import Difficulty

NAME = "slow_check"
CATEGORY = write_value.CATEGORY
MEDIAN_SEC, SIGMA = 8.0, 1.0


def check_seconds(rng: random.Random) -> float:
    """One task's wait before its tests (s), lognormal, rounded to 0.1 s."""
    return round(rng.lognormvariate(math.log(MEDIAN_SEC), SIGMA), 1)


def sample(rng: random.Random, level: Difficulty) -> FamilyTask:
    task = write_value.sample(rng, level)
    wait = check_seconds(rng)
    tests = task.tests.replace(
        "import json\n", f"import json\nimport time\n\ntime.sleep({wait})  # the slow check\n", 1
    )
    return FamilyTask(
        task.title,
        task.instruction,
        task.files,
        tests,
        task.weights,
        task.solution,
        (*task.tags, "slow-check"),
        task.mistake,
    )
