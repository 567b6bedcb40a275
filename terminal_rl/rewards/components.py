"""Reward components: small pure functions from an episode's records to a score in [0, 1].

A component returns ``score=None`` when it is *missing* (the judge failed or its budget ran out):
missing is never scored 0, because an outage is not bad behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from terminal_rl.agent.metrics import commands
from terminal_rl.agent.trajectory import Trajectory
from terminal_rl.rewards.fixture_guard import FixtureGuard, verdict


@dataclass(frozen=True)
class ComponentScore:
    name: str
    score: float | None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def missing(self) -> bool:
        return self.score is None


def score_tests(trajectory: Trajectory, guard: FixtureGuard = FixtureGuard.OFF) -> ComponentScore:
    """Weighted pytest partial credit from the verifier record (0 when the agent was not verified),
    under the forged-fixture guard (``fixture_guard.py``)."""
    verification = trajectory.verification or {}
    details = {"reason": verification.get("reason", "not verified" if not verification else "")}
    return _guarded(ComponentScore("tests", float(verification.get("score", 0.0)), details), verification, guard)


def score_task_reward(trajectory: Trajectory, guard: FixtureGuard = FixtureGuard.OFF) -> ComponentScore:
    """The task's own all-or-nothing verdict: a Harbor test.sh's reward file; for weighted tasks, 1
    when every weighted test passed (0 when the agent was not verified); under the guard too."""
    verification = trajectory.verification or {}
    own = verification.get("task_reward")
    value = float(own) if own is not None else float(verification.get("score", 0.0) == 1.0)
    details = {"source": "test.sh" if own is not None else "all tests passed"}
    return _guarded(ComponentScore("task_reward", value, details), verification, guard)


def _guarded(component: ComponentScore, verification: dict, guard: FixtureGuard) -> ComponentScore:
    forged, zeroed = verdict(verification, guard)
    if not forged:
        return component
    return ComponentScore(
        component.name, 0.0 if zeroed else component.score, {**component.details, "forged": forged, "zeroed": zeroed}
    )


def score_judge(judgement: dict[str, Any] | None) -> ComponentScore:
    """The judge's grade of how the agent worked; missing when there is no usable judgement."""
    if not judgement or judgement.get("score") is None:
        return ComponentScore("judge", None, {"reason": (judgement or {}).get("missing_reason", "not judged")})
    return ComponentScore("judge", float(judgement["score"]), {"backend": judgement.get("backend", "")})


def score_format(trajectory: Trajectory) -> ComponentScore:
    """Share of the agent's turns that parsed."""
    turns = trajectory.turns
    parsed = sum(t.parse_error is None for t in turns)
    return ComponentScore("format", parsed / len(turns) if turns else 0.0, {"turns": len(turns)})


def score_exec(trajectory: Trajectory) -> ComponentScore:
    """Share of shell commands that exited 0 (0 when the agent ran none)."""
    codes = [code for _, code in commands(trajectory) if code is not None]
    return ComponentScore("exec", sum(c == 0 for c in codes) / len(codes) if codes else 0.0, {"commands": len(codes)})


def score_efficiency(trajectory: Trajectory, max_turns: int, tests: float) -> ComponentScore:
    """Fewer turns score higher, but only when the tests gave some credit (no prize for quitting)."""
    if tests <= 0:
        return ComponentScore("efficiency", 0.0, {"reason": "tests scored 0"})
    used = len(trajectory.turns)
    return ComponentScore("efficiency", max(0.0, 1.0 - (used - 1) / max(1, max_turns)), {"turns": used})


def all_components(
    trajectory: Trajectory, judgement: dict[str, Any] | None, max_turns: int, guard: FixtureGuard = FixtureGuard.OFF
) -> dict[str, ComponentScore]:
    tests = score_tests(trajectory, guard)
    return {
        "tests": tests,
        "task_reward": score_task_reward(trajectory, guard),
        "judge": score_judge(judgement),
        "format": score_format(trajectory),
        "exec": score_exec(trajectory),
        "efficiency": score_efficiency(trajectory, max_turns, tests.score or 0.0),
    }
