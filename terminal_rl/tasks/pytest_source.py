"""What pytest would collect from a task's test sources, found with ``ast`` (no import, no run)."""

from __future__ import annotations

import ast

from terminal_rl.tasks.model import Task


def collect_test_names(tests: dict[str, str]) -> tuple[set[str], list[str]]:
    """Names pytest would collect from the python test files: ``test_x`` and ``TestX::test_y``.

    Returns:
        (names, syntax errors as messages)
    """
    names: set[str] = set()
    errors: list[str] = []
    for path, source in sorted(tests.items()):
        if not path.endswith(".py"):
            continue
        try:
            module = ast.parse(source, filename=path)
        except SyntaxError as error:
            errors.append(f"{path} line {error.lineno}: {error.msg}")
            continue
        for node in module.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                names.add(node.name)
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"):
                        names.add(f"{node.name}::{item.name}")
    return names, errors


def effective_weights(task: Task) -> dict[str, float]:
    """The task's weights, or equal weights over the collected tests when it has none."""
    if task.test_weights is not None:
        return dict(task.test_weights)
    names, _ = collect_test_names(task.tests)
    return {name: 1.0 / len(names) for name in sorted(names)}
