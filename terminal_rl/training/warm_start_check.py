"""What a warm start can do on the held-out tasks, against the ranges its experiment needs
(``warm_start.check``), measured once before any GRPO step (pure: ``training/warm_start.py`` runs the
episodes).

Per level of the held-out tasks, from greedy episodes: ``pass_rate`` (the share that passed every
test) and ``able`` (the share that ran the task's solution or the family's planted mistake: the model
copies the instruction's values, so what is left for GRPO is the choice the demonstrations planted).
A warm start outside the ranges trains without learning (a fresh machine's once wrote one file name
whatever the instruction named), so the run stops and shows these figures instead.
"""

from __future__ import annotations

from collections import defaultdict

from terminal_rl.agent.metrics import commands
from terminal_rl.agent.trajectory import Trajectory
from terminal_rl.tasks.model import Task

FIGURES = ("pass_rate", "able")


def script_commands(script: str) -> list[str]:
    """A solution or mistake script's commands, as an episode that runs it shows them."""
    return [line.strip() for line in script.splitlines() if line.strip()]


def ran_a_script(trajectory: Trajectory, task: Task) -> bool:
    """True when the episode ran exactly the task's solution or its planted mistake."""
    ran = [command for command, _ in commands(trajectory)]
    scripts = [task.solution, task.metadata.get("mistake")]
    return any(script is not None and ran == script_commands(script) for script in scripts)


def level_figures(trajectories: list[Trajectory], tasks: list[Task]) -> dict[str, dict]:
    """level -> {pass_rate, able (shares), episodes (a count)} over the trajectories of ``tasks``."""
    by_id = {task.id: task for task in tasks}
    if unknown := sorted({t.task_id for t in trajectories} - set(by_id)):
        raise ValueError(f"episodes of tasks {unknown[:5]} that the check did not ask for")
    outcomes: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for trajectory in trajectories:
        task = by_id[trajectory.task_id]
        passed = trajectory.score == 1.0
        outcomes[task.difficulty.value].append((passed, passed or ran_a_script(trajectory, task)))
    return {
        level: {
            "pass_rate": sum(p for p, _ in pairs) / len(pairs),
            "able": sum(a for _, a in pairs) / len(pairs),
            "episodes": len(pairs),
        }
        for level, pairs in sorted(outcomes.items())
    }


def validate_check(check: dict) -> None:
    """Raises naming what is wrong with ``warm_start.check`` (before hours of SFT, not after)."""
    if unknown := sorted(set(check) - set(FIGURES)):
        raise ValueError(f"warm_start.check names figures {unknown}; the figures are {list(FIGURES)}")
    for figure, ranges in check.items():
        if not isinstance(ranges, dict):
            raise ValueError(f"warm_start.check.{figure}={ranges} must map levels to [low, high]")
        for level, bounds in ranges.items():
            if not (isinstance(bounds, list | tuple) and len(bounds) == 2 and 0 <= bounds[0] <= bounds[1] <= 1):
                raise ValueError(f"warm_start.check.{figure}.{level}={bounds} must be [low, high] within [0, 1]")


def out_of_range(figures: dict[str, dict], check: dict[str, dict[str, list[float]]]) -> list[str]:
    """Each figure outside its ``check[figure][level] = [low, high]`` range, in words (empty: all within).
    A level the check names but the held-out tasks lack is one too."""
    validate_check(check)
    problems = []
    for figure, ranges in sorted(check.items()):
        for level, (low, high) in sorted(ranges.items()):
            if level not in figures:
                problems.append(f"no held-out {level} task to measure {figure} on")
            elif not low <= figures[level][figure] <= high:
                problems.append(f"{level} {figure} {figures[level][figure]:.3f} is outside [{low}, {high}]")
    return problems


def figures_lines(figures: dict[str, dict]) -> list[str]:
    """One console line per level."""
    return [
        f"  {level:<8} pass rate {f['pass_rate']:.3f}  able {f['able']:.3f}  ({f['episodes']} episodes)"
        for level, f in figures.items()
    ]
