"""Loaders: each turns one source format into :class:`~terminal_rl.tasks.model.Task` objects.

A loader never stops at a bad row or folder: it returns the tasks it could build and a
:class:`~terminal_rl.tasks.validation.Problem` for each one it could not. Only a source that cannot
be read at all (missing file, missing column) raises :class:`TaskSourceError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from terminal_rl.tasks.model import Task
from terminal_rl.tasks.validation import Problem


class TaskSourceError(ValueError):
    """The source as a whole cannot be read; the message names the source and what to fix."""


@dataclass
class LoadResult:
    tasks: list[Task] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
