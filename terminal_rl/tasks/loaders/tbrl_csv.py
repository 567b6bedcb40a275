"""Terminal-Bench-RL CSV: one row per task (schema in BRIEF.md).

``additional_files`` plays two roles. Files the Dockerfile COPYs/ADDs are its build context; the
rest are written into the container before the agent starts (the brief's "additional files").
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

from terminal_rl.tasks.dockerfile import copy_sources, is_copied
from terminal_rl.tasks.loaders import LoadResult, TaskSourceError
from terminal_rl.tasks.loaders.fields import parse_difficulty
from terminal_rl.tasks.model import Environment, Limits, Task, VerifierKind
from terminal_rl.tasks.validation import Problem, TaskError

COLUMNS = (
    "task_id",
    "difficulty",
    "title",
    "use_case_category",
    "prompt",
    "category",
    "tags",
    "dockerfile",
    "test_functions",
    "test_weights",
    "additional_files",
    "created_at",
    "updated_at",
)
# The name the tests get inside the task (Terminal-Bench's convention).
TEST_FILE = "test_outputs.py"


def load_tbrl_csv(path: Path, default_limits: Limits) -> LoadResult:
    """Load every row of a Terminal-Bench-RL CSV; bad rows become problems, not exceptions."""
    if not path.is_file():
        raise TaskSourceError(f"Terminal-Bench-RL CSV {path} does not exist")
    csv.field_size_limit(sys.maxsize)
    result = LoadResult()
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise TaskSourceError(
                f"{path}: missing column(s) {missing}; a Terminal-Bench-RL CSV has columns {list(COLUMNS)}"
            )
        for row_number, row in enumerate(reader, start=1):
            try:
                result.tasks.append(row_to_task(row, f"csv:{path}#row={row_number}", default_limits))
            except TaskError as error:
                result.problems.append(error.problem)
    return result


def row_to_task(row: dict[str, str], source: str, default_limits: Limits) -> Task:
    task_id = row["task_id"].strip()

    def fail(field: str, message: str) -> TaskError:
        return TaskError(Problem(task_id or "<no id>", field, message, source))

    if not task_id:
        raise fail("task_id", "is empty")
    weights = _json_object(row["test_weights"], "test_weights", fail)
    extra_files = _json_object(row["additional_files"] or "{}", "additional_files", fail)
    for name, content in extra_files.items():
        if not isinstance(content, str):
            raise fail("additional_files", f"content of {name!r} is {type(content).__name__}, not text")
    sources = copy_sources(row["dockerfile"])
    return Task(
        id=task_id,
        title=row["title"],
        prompt=row["prompt"],
        difficulty=parse_difficulty(row["difficulty"], fail),
        category=row["category"],
        tags=tuple(t for t in row["tags"].split("|") if t),
        environment=Environment(
            dockerfile=row["dockerfile"],
            build_context={p: c.encode() for p, c in extra_files.items() if is_copied(p, sources)},
        ),
        tests={TEST_FILE: row["test_functions"]},
        verifier=VerifierKind.WEIGHTED_PYTEST,
        test_weights=weights,
        files={p: c.encode() for p, c in extra_files.items() if not is_copied(p, sources)},
        limits=default_limits,
        source=source,
        metadata={k: row[k] for k in ("use_case_category", "created_at", "updated_at") if row[k]},
    )


def _json_object(text: str, field: str, fail) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise fail(field, f"broken JSON ({error.msg} at line {error.lineno} column {error.colno})") from error
    if not isinstance(value, dict):
        raise fail(field, f"must be a JSON object, got {type(value).__name__}")
    return value
