"""Terminal-Bench 1 task folders.

Layout: ``task.yaml`` (instruction, difficulty, category, tags, max_agent_timeout_sec,
max_test_timeout_sec), ``Dockerfile`` plus the folder as build context, ``run-tests.sh``,
``tests/test_outputs.py``, optional ``solution.sh`` and ``test_weights.json``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import yaml

from terminal_rl.tasks.loaders import LoadResult
from terminal_rl.tasks.loaders.fields import parse_difficulty, parse_seconds, parse_tags
from terminal_rl.tasks.loaders.folders import decode_text, load_folders, read_tree
from terminal_rl.tasks.model import Environment, Limits, Task, VerifierKind
from terminal_rl.tasks.validation import Problem, TaskError

# Files that are not part of the image's build context.
_NOT_CONTEXT = frozenset({"task.yaml", "Dockerfile", "run-tests.sh", "tests", "solution.sh", "test_weights.json"})


def load_tb1(root: Path, default_limits: Limits) -> LoadResult:
    """Load one Terminal-Bench 1 task folder, or every task folder directly below ``root``."""
    return load_folders(root, "task.yaml", folder_to_task, default_limits)


def folder_to_task(folder: Path, default_limits: Limits) -> Task:
    task_id = folder.name
    source = f"tb1:{folder}"

    def fail(field: str, message: str) -> TaskError:
        return TaskError(Problem(task_id, field, message, source))

    try:
        config = yaml.safe_load((folder / "task.yaml").read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise fail("task.yaml", f"broken YAML: {error}") from error
    if not isinstance(config.get("instruction"), str):
        raise fail("prompt", "task.yaml has no 'instruction' text")
    dockerfile = folder / "Dockerfile"
    # Keyed relative to tests/ like every other format; run-tests.sh rides along as the entry point.
    tests = decode_text(read_tree(folder / "tests"), task_id, "tests", source)
    run_tests = folder / "run-tests.sh"
    if run_tests.is_file():
        tests["run-tests.sh"] = run_tests.read_text(encoding="utf-8")
    limits = replace(
        default_limits,
        **{
            field: parse_seconds(config[key], key, fail)
            for key, field in (
                ("max_agent_timeout_sec", "agent_timeout_sec"),
                ("max_test_timeout_sec", "verifier_timeout_sec"),
            )
            if key in config
        },
    )
    solution = folder / "solution.sh"
    return Task(
        id=task_id,
        title=str(config.get("title", task_id)),
        prompt=config["instruction"],
        difficulty=parse_difficulty(config.get("difficulty"), fail),
        category=str(config.get("category", "")),
        tags=parse_tags(config.get("tags"), fail),
        environment=Environment(
            dockerfile=dockerfile.read_text(encoding="utf-8") if dockerfile.is_file() else None,
            build_context=read_tree(folder, skip=_NOT_CONTEXT),
        ),
        tests=tests,
        verifier=VerifierKind.TB1,
        test_weights=_weights(folder / "test_weights.json", fail),
        files={},
        limits=limits,
        source=source,
        solution=solution.read_text(encoding="utf-8") if solution.is_file() else None,
        metadata={k: str(config[k]) for k in ("author_email", "parser_name") if k in config},
    )


def _weights(path: Path, fail) -> dict[str, float] | None:
    if not path.is_file():
        return None
    try:
        weights = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise fail("test_weights", f"test_weights.json: broken JSON ({error.msg} at line {error.lineno})") from error
    if not isinstance(weights, dict):
        raise fail("test_weights", f"test_weights.json must be a JSON object, got {type(weights).__name__}")
    return weights
