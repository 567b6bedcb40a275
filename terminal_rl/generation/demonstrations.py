"""SFT demonstrations from procedural tasks: each task's solution as the model turns of one protocol,
for the scripted policy (``policy=scripted``) to play in real sandboxes, so the records the datasets
builder makes of them carry real observations in the training rendering.

A disclosed share of the tasks whose family knows a plausible mistake get the mistake instead: a
model warmed up on them makes it as often, so reinforcement learning has something left to fix.
"""

from __future__ import annotations

import random

from terminal_rl.tasks.model import Task

# One model turn per command, then the done signal (agent/protocols/bash_only.py).
_PROTOCOL_TURNS = {"bash_only": (lambda command: f"<command>{command}</command>", "<done/>")}


def demonstration_turns(script: str, protocol: str) -> list[str]:
    """The model turns that run ``script`` (one command per non-empty line) and finish."""
    if protocol not in _PROTOCOL_TURNS:
        raise ValueError(f"demonstrations are written for protocols {sorted(_PROTOCOL_TURNS)}, not {protocol!r}")
    command, done = _PROTOCOL_TURNS[protocol]
    return [command(line.strip()) for line in script.splitlines() if line.strip()] + [done]


def demonstrations(tasks: list[Task], protocol: str, mistake_share: float, seed: int) -> dict[str, list[str]]:
    """task id -> model turns: the solution, or for ``mistake_share`` of the tasks that have a
    ``mistake`` (drawn with ``seed``) the mistake."""
    if not 0.0 <= mistake_share <= 1.0:
        raise ValueError(f"mistake_share={mistake_share} must be in [0, 1]")
    rng = random.Random(seed)
    scripts = {}
    for task in sorted(tasks, key=lambda t: t.id):
        if task.solution is None:
            raise ValueError(f"task {task.id} has no solution to demonstrate")
        mistake = task.metadata.get("mistake")
        wrong = mistake is not None and rng.random() < mistake_share
        scripts[task.id] = demonstration_turns(mistake if wrong else task.solution, protocol)
    return scripts
