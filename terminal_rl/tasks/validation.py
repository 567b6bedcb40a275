"""Validate tasks and report every problem over a whole dataset instead of stopping at the first.

A problem names the task, the field and what is wrong. Tasks with problems are excluded, never
repaired: a silently "fixed" weight map (the field's classic bug: unmatched keys falling back to
equal weights) trains on a reward nobody specified.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from terminal_rl.tasks.dockerfile import base_images
from terminal_rl.tasks.model import Task, VerifierKind
from terminal_rl.tasks.pytest_source import collect_test_names

WEIGHT_SUM_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Problem:
    """One reason a task (or a source row) is rejected."""

    task_id: str
    field: str
    message: str
    # Where the bad input is, e.g. "terminal_bench_rl.csv row 12".
    location: str = ""

    def __str__(self) -> str:
        where = f" ({self.location})" if self.location else ""
        return f"task {self.task_id!r}{where}: {self.field}: {self.message}"


class TaskError(ValueError):
    """Raised by loaders for input that cannot become a :class:`Task`; carries the problem."""

    def __init__(self, problem: Problem):
        super().__init__(str(problem))
        self.problem = problem


@dataclass(frozen=True)
class ValidationReport:
    valid: list[Task]
    problems: list[Problem]

    @property
    def rejected_ids(self) -> list[str]:
        return sorted({p.task_id for p in self.problems})


def validate_tasks(tasks: Iterable[Task], problems: Iterable[Problem] = ()) -> ValidationReport:
    """Check every task; tasks with any problem (including duplicate ids) are excluded.

    Args:
        tasks: loaded tasks.
        problems: problems the loader already found (rows that never became tasks).
    """
    tasks = list(tasks)
    all_problems = list(problems)
    counts = Counter(t.id for t in tasks)
    for task_id, n in sorted(counts.items()):
        if n > 1:
            sources = ", ".join(t.source for t in tasks if t.id == task_id)
            all_problems.append(Problem(task_id, "id", f"duplicate id, used {n} times ({sources})"))
    for task in tasks:
        all_problems.extend(task_problems(task))
    bad = {p.task_id for p in all_problems}
    return ValidationReport(valid=[t for t in tasks if t.id not in bad], problems=all_problems)


def task_problems(task: Task) -> list[Problem]:
    """All problems of one task (duplicate ids are a dataset-level check, see above)."""
    problems: list[Problem] = []

    def add(field: str, message: str) -> None:
        problems.append(Problem(task.id, field, message, task.source))

    if not task.id.strip() or "/" in task.id:
        add("id", f"{task.id!r} must be a non-empty name without '/'")
    if not task.prompt.strip():
        add("prompt", "is empty")
    env = task.environment
    if env.image is None and env.dockerfile is None:
        add("environment", "needs a Dockerfile or an image name")
    if env.dockerfile is not None and not base_images(env.dockerfile):
        add("environment.dockerfile", "has no FROM line")
    for path in env.build_context:
        if reason := unsafe_relative_path(path):
            add("environment.build_context", f"path {path!r} {reason}")
    for path in task.tests:
        if reason := unsafe_relative_path(path):
            add("tests", f"path {path!r} {reason}")
    for path in task.files:
        if reason := unsafe_container_path(path):
            add("files", f"path {path!r} {reason}")
    if not task.tests:
        add("tests", "no test files")
    if task.verifier is VerifierKind.HARBOR and "test.sh" not in task.tests:
        add("tests", "Harbor tasks need tests/test.sh")
    if task.verifier is not VerifierKind.HARBOR or task.test_weights is not None:
        problems.extend(_weight_problems(task))
    return problems


def _weight_problems(task: Task) -> list[Problem]:
    problems: list[Problem] = []

    def add(message: str, field: str = "test_weights") -> None:
        problems.append(Problem(task.id, field, message, task.source))

    names, syntax_errors = collect_test_names(task.tests)
    for error in syntax_errors:
        add(f"cannot parse test source: {error}", "tests")
    if syntax_errors:
        return problems
    if not names:
        add("the test source defines no test functions", "tests")
        return problems
    weights = task.test_weights
    if weights is None:
        return problems
    for name, weight in sorted(weights.items()):
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
            add(f"weight of {name!r} is {weight!r}, not a finite number")
        elif weight < 0:
            add(f"weight of {name!r} is {weight}, must be >= 0")
    numeric = [w for w in weights.values() if isinstance(w, (int, float)) and not isinstance(w, bool)]
    if len(numeric) == len(weights) and abs(sum(numeric) - 1.0) > WEIGHT_SUM_TOLERANCE:
        add(f"weights sum to {sum(numeric):.6g}, must sum to 1 (±{WEIGHT_SUM_TOLERANCE:g})")
    unknown = sorted(set(weights) - names)
    if unknown:
        add(f"weight keys {unknown} name no test function in the test source; tests are {sorted(names)}")
    unweighted = sorted(names - set(weights))
    if unweighted:
        add(f"test functions {unweighted} have no weight; give every test a weight or omit weights")
    return problems


def unsafe_relative_path(path: str) -> str | None:
    """Why ``path`` cannot be a relative path inside a folder, or None when it is safe."""
    pure = PurePosixPath(path)
    if not path or pure.is_absolute():
        return "must be a non-empty relative path"
    if ".." in pure.parts:
        return "escapes its folder with '..'"
    return None


def unsafe_container_path(path: str) -> str | None:
    """Container paths may be absolute; relative ones must not climb out with '..'."""
    if not path:
        return "is empty"
    if ".." in PurePosixPath(path).parts:
        return "escapes its folder with '..'"
    return None
