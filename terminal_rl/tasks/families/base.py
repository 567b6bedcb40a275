"""What a procedural family produces for one task, and the environment every family shares.

A family is a module with ``NAME``, ``CATEGORY`` and ``sample(rng, level) -> FamilyTask``: it draws
the task's parameters from ``rng`` and writes the input files, the instruction, weighted pytest
tests and a solution script from them, so the task is correct by construction. Every family's tasks
build FROM the same Dockerfile (one image for all of them); a task's own files enter the container
at start. Tests read absolute paths under ``/app`` and use only Python's standard library.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

# The one environment of every procedural task: our offline Ubuntu base (sandbox.base_images).
DOCKERFILE = "FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest\nWORKDIR /app\n"


@dataclass(frozen=True)
class FamilyTask:
    title: str
    instruction: str
    # Container path -> content, written before the agent starts.
    files: dict[str, str]
    # pytest source (one file) and its test name -> weight (summing to 1).
    tests: str
    weights: dict[str, float]
    # bash that solves the task from the initial state.
    solution: str
    tags: tuple[str, ...] = field(default_factory=tuple)
    # bash a plausible wrong attempt would run (SFT demonstrations with room to learn); None: no such.
    mistake: str | None = None


def pytest_file(*functions: str) -> str:
    """A pytest module from dedented function sources."""
    return "import json\nimport os\nimport subprocess\n\n\n" + "\n\n".join(
        textwrap.dedent(f).strip() + "\n" for f in functions
    )


def read_text_helper() -> str:
    return """
        def read(path):
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        """
