"""Harbor task folders (the Terminal-Bench 2.0 format).

Layout: ``instruction.md``, ``task.toml`` (``[metadata]``, ``[verifier]``, ``[agent]``,
``[environment]``), ``environment/Dockerfile`` plus its build context, ``tests/test.sh`` and test
files, optional ``solution/solve.sh``. The verifier runs ``tests/test.sh``, which writes the reward.
Per-test weights, when the task has them, are ``tests/test_weights.json`` (test name -> weight, the
file our export writes): the verifier then scores the per-test outcomes with them.

Harbor has no files written before the agent starts, so our export bakes a task's into the image:
``environment/_preagent/<path>`` with one ``COPY ["_preagent/<path>", "<path>"]`` line each at the end
of the Dockerfile. Reading such a folder back turns them into start files again, so tasks that share
an environment (a procedural family) share one image here while standard harnesses still work.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

from terminal_rl.tasks.loaders import LoadResult
from terminal_rl.tasks.loaders.fields import parse_difficulty, parse_memory_mb, parse_seconds, parse_tags
from terminal_rl.tasks.loaders.folders import decode_text, load_folders, read_tree
from terminal_rl.tasks.model import Environment, Limits, Task, VerifierKind
from terminal_rl.tasks.validation import Problem, TaskError

WEIGHTS_FILE = "test_weights.json"
PREAGENT_DIR = "_preagent"
# [metadata] keys the model has fields for; the rest is kept in Task.metadata.
_MODELLED_METADATA = {"difficulty", "category", "tags", "title", "terminal_rl"}


def load_harbor(root: Path, default_limits: Limits) -> LoadResult:
    """Load one Harbor task folder, or every task folder directly below ``root``."""
    return load_folders(root, "task.toml", folder_to_task, default_limits)


def folder_to_task(folder: Path, default_limits: Limits) -> Task:
    task_id = folder.name
    source = f"harbor:{folder}"

    def fail(field: str, message: str) -> TaskError:
        return TaskError(Problem(task_id, field, message, source))

    try:
        config = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise fail("task.toml", f"broken TOML: {error}") from error
    instruction = folder / "instruction.md"
    if not instruction.is_file():
        raise fail("prompt", "instruction.md is missing")
    metadata = config.get("metadata", {})
    environment = config.get("environment", {})
    context = read_tree(folder / "environment")
    dockerfile = context.pop("Dockerfile", None)
    files = {}
    if dockerfile is not None:
        dockerfile, files = start_files(dockerfile.decode("utf-8"), context)
    solution = folder / "solution" / "solve.sh"
    tests = decode_text(read_tree(folder / "tests"), task_id, "tests", source)
    try:
        weights = json.loads(tests[WEIGHTS_FILE]) if WEIGHTS_FILE in tests else None
    except json.JSONDecodeError as error:
        raise fail("test_weights", f"tests/{WEIGHTS_FILE} is not JSON: {error}") from error
    if weights is not None and not isinstance(weights, dict):
        raise fail("test_weights", f"tests/{WEIGHTS_FILE} must map test names to weights")
    return Task(
        id=task_id,
        title=str(metadata.get("title", task_id)),
        prompt=instruction.read_text(encoding="utf-8"),
        difficulty=parse_difficulty(metadata.get("difficulty"), fail),
        category=str(metadata.get("category", "")),
        tags=parse_tags(metadata.get("tags"), fail),
        environment=Environment(
            dockerfile=dockerfile,
            build_context=context,
            image=environment.get("docker_image"),
        ),
        tests=tests,
        verifier=VerifierKind.HARBOR,
        test_weights=weights,
        files=files,
        limits=_limits(config, default_limits, fail),
        source=source,
        solution=solution.read_text(encoding="utf-8") if solution.is_file() else None,
        metadata={k: str(v) for k, v in metadata.items() if k not in _MODELLED_METADATA},
    )


def preagent_copy(container_path: str) -> str:
    """The Dockerfile line that bakes one start file into the image (the export's, read back here)."""
    return f"COPY {json.dumps([preagent_path(container_path), container_path])}\n"


def preagent_path(container_path: str) -> str:
    return f"{PREAGENT_DIR}/{container_path.lstrip('/')}"


def start_files(dockerfile: str, context: dict[str, bytes]) -> tuple[str, dict[str, bytes]]:
    """Split the export's trailing ``_preagent`` COPY lines off ``dockerfile``: (the Dockerfile without
    them, container path -> bytes). Their sources leave ``context``."""
    lines = dockerfile.splitlines(keepends=True)
    files = {}
    while lines:
        try:
            source, target = json.loads(lines[-1].removeprefix("COPY "))
        except (ValueError, TypeError):
            break
        if lines[-1] != preagent_copy(target) or source not in context:
            break
        files[target] = context.pop(source)
        lines.pop()
    return "".join(lines), files


def _limits(config: dict, default: Limits, fail) -> Limits:
    """Limits from task.toml, falling back to ``default`` for what it does not set."""
    env = config.get("environment", {})
    overrides = {}
    for table, key, field in (
        ("agent", "timeout_sec", "agent_timeout_sec"),
        ("verifier", "timeout_sec", "verifier_timeout_sec"),
        ("environment", "build_timeout_sec", "build_timeout_sec"),
    ):
        if key in config.get(table, {}):
            overrides[field] = parse_seconds(config[table][key], f"{table}.{key}", fail)
    memory = env.get("memory_mb", env.get("memory"))
    if memory is not None:
        overrides["memory_mb"] = parse_memory_mb(memory, fail)
    for key, field in (("cpus", "cpus"), ("pids_limit", "pids"), ("allow_internet", "network")):
        if key in env:
            overrides[field] = env[key]
    # Our limit Harbor's schema has no field for (harbor_export.py); older exports had it in [environment].
    metadata = config.get("metadata", {})
    ours = metadata.get("terminal_rl", {}) if isinstance(metadata, dict) else {}
    if isinstance(ours, dict) and "pids_limit" in ours:
        overrides["pids"] = ours["pids_limit"]
    try:
        return replace(default, **overrides)
    except ValueError as error:
        raise fail("task.toml [environment]", str(error)) from error
