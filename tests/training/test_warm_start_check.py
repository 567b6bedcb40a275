"""The warm start's check in milliseconds: each held-out episode counted as passed, able (the solution
or the planted mistake, values copied) or neither, per level, and held against the ranges."""

from __future__ import annotations

import pytest

from terminal_rl.agent.trajectory import Trajectory, Turn
from terminal_rl.tasks.procedural import procedural_tasks
from terminal_rl.training.warm_start_check import level_figures, out_of_range, ran_a_script, validate_check
from tests.support import small_limits

TASKS = procedural_tasks("write_value", 6, 1, ["easy", "medium", "hard"], small_limits())


def episode(task, *commands: str, score: float) -> Trajectory:
    turns = [
        Turn(i, f"<command>{c}</command>", [{"tool": "bash", "args": {"cmd": c}}], [{"exit_code": 0}], "", None, 0, 0)
        for i, c in enumerate(commands)
    ]
    return Trajectory(task.id, task.content_hash, "bash_only", "token", turns=turns, verification={"score": score})


def solution(task) -> str:
    return task.solution.strip()


def mistake(task) -> str:
    return task.metadata["mistake"].strip()


def test_the_planted_mistake_counts_as_able_and_anything_else_does_not():
    task = next(t for t in TASKS if t.difficulty.value == "medium")
    assert ran_a_script(episode(task, mistake(task), score=0.0), task)
    assert ran_a_script(episode(task, solution(task), score=1.0), task)
    collapsed = mistake(task).rsplit("/", 1)[0] + "/elsewhere.txt"
    assert not ran_a_script(episode(task, collapsed, score=0.0), task), "another file name: not able"
    assert not ran_a_script(episode(task, mistake(task), "ls", score=0.0), task), "the mistake and more: not able"
    assert not ran_a_script(episode(task, score=0.0), task), "no command"


def test_figures_per_level_and_the_ranges_they_fall_outside():
    by_level = {level: [t for t in TASKS if t.difficulty.value == level] for level in ("easy", "medium", "hard")}
    episodes = [episode(t, solution(t), score=1.0) for t in by_level["easy"]]
    episodes += [episode(t, mistake(t), score=0.0) for t in by_level["medium"]]
    first, second = by_level["hard"]
    episodes += [episode(first, mistake(first), score=0.0), episode(second, "echo hi > /app/note.txt", score=0.3)]
    figures = level_figures(episodes, TASKS)
    assert figures == {
        "easy": {"pass_rate": 1.0, "able": 1.0, "episodes": 2},
        "hard": {"pass_rate": 0.0, "able": 0.5, "episodes": 2},
        "medium": {"pass_rate": 0.0, "able": 1.0, "episodes": 2},
    }
    check = {"pass_rate": {"easy": [0.9, 1.0], "medium": [0.0, 0.3]}, "able": {"hard": [0.8, 1.0]}}
    assert out_of_range(figures, check) == ["hard able 0.500 is outside [0.8, 1.0]"]
    assert out_of_range(figures, {"able": {"hard": [0.5, 1.0]}}) == [], "the bounds are inclusive"
    assert out_of_range({"easy": figures["easy"]}, {"able": {"hard": [0.0, 1.0]}}) == [
        "no held-out hard task to measure able on"
    ]
    with pytest.raises(ValueError, match=r"names figures \['pass'\]"):
        out_of_range(figures, {"pass": {"easy": [0.9, 1.0]}})
    with pytest.raises(ValueError, match=r"check.able.easy=\[0.9\] must be \[low, high\] within \[0, 1\]"):
        validate_check({"able": {"easy": [0.9]}})
    with pytest.raises(ValueError, match=r"check.able=None must map levels"):
        validate_check({"able": None})
    with pytest.raises(ValueError, match="did not ask for"):
        level_figures(episodes, by_level["easy"])
