"""The generator LLM's three outputs, parsed strictly from its reply (pure).

A reply must hold one JSON object (``reply_object``) with exactly the stage's keys and
types; anything else is a :class:`MalformedReply` whose message says what is wrong, which goes back
to the LLM once as a correction request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from terminal_rl.agent.policies.model_json import MalformedReply, reply_object


@dataclass(frozen=True)
class Description:
    """Stage 1: what the agent is told, and the privileged ground truth it never sees."""

    title: str
    instruction: str
    # Files the initial state holds (path -> content), paths the task is about, and the final state.
    ground_truth: dict[str, Any]


@dataclass(frozen=True)
class EnvironmentDraft:
    """Stage 2: the image and the tests that the initial state passes."""

    dockerfile: str
    initial_tests: str


@dataclass(frozen=True)
class CompletionDraft:
    """Stage 3: weighted completion tests and a reference solution (bash)."""

    tests: str
    weights: dict[str, float]
    solution: str


def _fields(value: dict[str, Any], expected: dict[str, type]) -> dict[str, Any]:
    missing, unknown = sorted(set(expected) - set(value)), sorted(set(value) - set(expected))
    if missing or unknown:
        raise MalformedReply(
            f"the object must have exactly the keys {sorted(expected)}"
            + (f"; missing {missing}" if missing else "")
            + (f"; unexpected {unknown}" if unknown else "")
        )
    for key, kind in expected.items():
        if not isinstance(value[key], kind) or (kind is str and not value[key].strip()):
            raise MalformedReply(f"{key!r} must be a non-empty {kind.__name__}")
    return value


def parse_description(text: str) -> Description:
    value = _fields(reply_object(text), {"title": str, "instruction": str, "ground_truth": dict})
    truth = _fields(value["ground_truth"], {"files": dict, "paths": list, "expected_final_state": str})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in truth["files"].items()):
        raise MalformedReply("ground_truth.files must map paths to text contents")
    return Description(value["title"].strip(), value["instruction"].strip(), truth)


def parse_environment(text: str) -> EnvironmentDraft:
    value = _fields(reply_object(text), {"dockerfile": str, "initial_tests": str})
    return EnvironmentDraft(value["dockerfile"], value["initial_tests"])


def parse_completion(text: str) -> CompletionDraft:
    value = _fields(reply_object(text), {"tests": str, "weights": dict, "solution": str})
    weights = value["weights"]
    if not all(isinstance(w, (int, float)) and not isinstance(w, bool) for w in weights.values()):
        raise MalformedReply("'weights' must map test names to numbers")
    return CompletionDraft(value["tests"], {k: float(w) for k, w in weights.items()}, value["solution"])
