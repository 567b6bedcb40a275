"""SFT demonstrations from procedural tasks: each task's solution as the model turns of one protocol,
for the scripted policy (``policy=scripted``) to play in real sandboxes, so the records the datasets
builder makes of them carry real observations in the training rendering.

A disclosed share of the tasks of each level whose family knows a plausible mistake get the mistake
instead: a model warmed up on them makes it as often, so reinforcement learning has something left to
fix.
"""

from __future__ import annotations

import random

from terminal_rl.tasks.model import Difficulty, Task

# One model turn per command, then the done signal (agent/protocols/bash_only.py).
_PROTOCOL_TURNS = {"bash_only": (lambda command: f"<command>{command}</command>", "<done/>")}


def demonstration_turns(script: str, protocol: str) -> list[str]:
    """The model turns that run ``script`` (one command per non-empty line) and finish."""
    if protocol not in _PROTOCOL_TURNS:
        raise ValueError(f"demonstrations are written for protocols {sorted(_PROTOCOL_TURNS)}, not {protocol!r}")
    command, done = _PROTOCOL_TURNS[protocol]
    return [command(line.strip()) for line in script.splitlines() if line.strip()] + [done]


def demonstrations(
    tasks: list[Task], protocol: str, mistake_share: dict[str, float], seed: int
) -> dict[str, list[str]]:
    """task id -> model turns: the solution, or the ``mistake`` for ``mistake_share[level]`` of a
    level's tasks that have one (that many exactly, rounded, drawn with ``seed``; a level not named
    gets none)."""
    levels = {level.value for level in Difficulty}
    for level, share in mistake_share.items():
        if level not in levels:
            raise ValueError(f"mistake_share names level {level!r}; the levels are {sorted(levels)}")
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"mistake_share.{level}={share} must be in [0, 1]")
    if missing := [task.id for task in tasks if task.solution is None]:
        raise ValueError(f"tasks {missing} have no solution to demonstrate")
    rng = random.Random(seed)
    ordered = sorted(tasks, key=lambda t: t.id)
    wrong = set()
    for level, share in sorted(mistake_share.items()):
        candidates = [t.id for t in ordered if t.difficulty.value == level and t.metadata.get("mistake")]
        wrong.update(rng.sample(candidates, round(share * len(candidates))))
    return {
        task.id: demonstration_turns(task.metadata["mistake"] if task.id in wrong else task.solution, protocol)
        for task in ordered
    }
