"""The one typed task model that every loader produces and every consumer reads.

A task is an environment (a Dockerfile with its build context, or an image), an instruction,
tests with the verifier that runs them, and the limits a rollout runs under. Tasks are immutable
and carry a content hash over everything that changes what a rollout does, so that a dataset row can
refer to a task by ``(id, hash)`` and a rollout can refuse stale or tampered tasks.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any


class Difficulty(StrEnum):
    EASY = "easy"
    MEDIUM = "medium"
    HARD = "hard"
    EXTREMELY_HARD = "extremely_hard"


class VerifierKind(StrEnum):
    """How a task's tests turn into a score."""

    # pytest over the task's test files; score = sum of weights of PASSED tests.
    WEIGHTED_PYTEST = "weighted_pytest"
    # Harbor (Terminal-Bench 2.0): run tests/test.sh, read the reward it writes to /logs/verifier.
    HARBOR = "harbor"
    # Terminal-Bench 1: run run-tests.sh (pytest over tests/), weighted like WEIGHTED_PYTEST.
    TB1 = "tb1"


@dataclass(frozen=True)
class Limits:
    """What one rollout of the task may use. Loaders fill gaps from ``task_set.default_limits``."""

    agent_timeout_sec: float
    verifier_timeout_sec: float
    build_timeout_sec: float
    cpus: float
    memory_mb: int
    pids: int
    # Network off unless the task needs it; when on, egress to the outside only.
    network: bool

    def __post_init__(self) -> None:
        """Normalise number types (YAML's 1800 and TOML's 1800.0 must hash alike) and check ranges."""
        for name, kind in (
            ("agent_timeout_sec", float),
            ("verifier_timeout_sec", float),
            ("build_timeout_sec", float),
            ("cpus", float),
            ("memory_mb", int),
            ("pids", int),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"limits.{name}={value!r} must be a positive number")
            object.__setattr__(self, name, kind(value))
        if not isinstance(self.network, bool):
            raise ValueError(f"limits.network={self.network!r} must be true or false")


@dataclass(frozen=True)
class Environment:
    """Either a Dockerfile with its build context (relative path -> bytes) or a ready image name."""

    dockerfile: str | None = None
    build_context: dict[str, bytes] = field(default_factory=dict)
    image: str | None = None


@dataclass(frozen=True)
class Task:
    id: str
    title: str
    # The instruction the agent receives.
    prompt: str
    difficulty: Difficulty
    category: str
    tags: tuple[str, ...]
    environment: Environment
    # Test files, relative path -> source; entered into the container only at verify time.
    tests: dict[str, str]
    verifier: VerifierKind
    # Test name ("test_x" or "TestClass::test_x") -> weight, summing to 1. None means equal weights
    # over the collected tests (weighted kinds) or not applicable (HARBOR).
    test_weights: dict[str, float] | None
    # Written into the container before the agent starts; container path (absolute, or relative to
    # the image's working directory) -> bytes.
    files: dict[str, bytes]
    limits: Limits
    # Where the task came from, e.g. "csv:/data/tbrl.csv#row=12"; not part of the content hash.
    source: str
    # Oracle solution script (bash), for validating task sets.
    solution: str | None = None
    # Source-specific extras kept for reports (e.g. use_case_category, created_at).
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        """sha256 (hex) over every field that changes a rollout, i.e. all but ``source``."""
        content = task_to_dict(self)
        del content["source"]
        return hashlib.sha256(_canonical_json(content).encode()).hexdigest()

    def with_source(self, source: str) -> Task:
        return replace(self, source=source)


def task_to_dict(task: Task) -> dict[str, Any]:
    """JSON-ready dict; bytes become ``{"base64": ...}`` so binary files survive."""
    return _encode(asdict(task))


def task_from_dict(data: dict[str, Any]) -> Task:
    """Inverse of :func:`task_to_dict`."""
    env = data["environment"]
    return Task(
        id=data["id"],
        title=data["title"],
        prompt=data["prompt"],
        difficulty=Difficulty(data["difficulty"]),
        category=data["category"],
        tags=tuple(data["tags"]),
        environment=Environment(
            dockerfile=env["dockerfile"],
            build_context={p: _decode_bytes(b) for p, b in env["build_context"].items()},
            image=env["image"],
        ),
        tests=dict(data["tests"]),
        verifier=VerifierKind(data["verifier"]),
        test_weights=None if data["test_weights"] is None else dict(data["test_weights"]),
        files={p: _decode_bytes(b) for p, b in data["files"].items()},
        limits=Limits(**data["limits"]),
        source=data["source"],
        solution=data["solution"],
        metadata=dict(data["metadata"]),
    )


def task_to_json(task: Task) -> str:
    return _canonical_json(task_to_dict(task))


def task_from_json(text: str) -> Task:
    return task_from_dict(json.loads(text))


def _canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode()}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode_bytes(value: dict[str, str]) -> bytes:
    return base64.b64decode(value["base64"])
