"""Helpers for folder-based task formats (Harbor, Terminal-Bench 1)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from terminal_rl.tasks.loaders import LoadResult, TaskSourceError
from terminal_rl.tasks.model import Limits, Task
from terminal_rl.tasks.validation import Problem, TaskError


def task_folders(root: Path, marker: str) -> list[Path]:
    """``root`` itself when it holds ``marker``, else its sub-folders that do, sorted by name."""
    if not root.is_dir():
        raise TaskSourceError(f"task folder {root} does not exist")
    if (root / marker).is_file():
        return [root]
    return sorted(p for p in root.iterdir() if (p / marker).is_file())


def load_folders(
    root: Path, marker: str, folder_to_task: Callable[[Path, Limits], Task], default_limits: Limits
) -> LoadResult:
    """Every task folder of ``root`` (``task_folders``) through ``folder_to_task``; a folder that
    raises ``TaskError`` becomes its problem, the others load."""
    result = LoadResult()
    for folder in task_folders(root, marker):
        try:
            result.tasks.append(folder_to_task(folder, default_limits))
        except TaskError as error:
            result.problems.append(error.problem)
    return result


def read_tree(root: Path, skip: frozenset[str] = frozenset()) -> dict[str, bytes]:
    """Every file below ``root`` as relative POSIX path -> bytes; ``skip`` names top-level entries."""
    if not root.is_dir():
        return {}
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.relative_to(root).parts[0] not in skip
    }


def decode_text(files: dict[str, bytes], task_id: str, field: str, source: str) -> dict[str, str]:
    """Test files must be text: decode them, naming the file that is not UTF-8."""
    decoded = {}
    for path, data in files.items():
        try:
            decoded[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            raise TaskError(Problem(task_id, field, f"{path} is not UTF-8 text", source)) from None
    return decoded
