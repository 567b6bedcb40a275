"""Behaviour metrics of a trajectory (after Endless Terminals): loops, turn exhaustion, command
diversity after errors, parse-error rate, tool usage. Pure: a trajectory in, numbers out."""

from __future__ import annotations

from collections import Counter

from terminal_rl.agent.trajectory import Termination, Trajectory

DEFAULT_LOOP_REPEATS = 3
MAX_LOOP_PERIOD = 4


def commands(trajectory: Trajectory) -> list[tuple[str, int | None]]:
    """(command, exit code) of every shell command or keystroke batch the agent ran, in order."""
    runs = []
    for turn in trajectory.turns:
        for action, result in zip(turn.actions, turn.results):
            if action["tool"] == "bash":
                runs.append((action["args"]["cmd"].strip(), result.get("exit_code")))
            elif action["tool"] == "keys":
                runs.append((action["args"]["keystrokes"].strip(), None))
    return runs


def has_loop(sequence: list[str], repeats: int = DEFAULT_LOOP_REPEATS, max_period: int = MAX_LOOP_PERIOD) -> bool:
    """True when some block of 1..max_period commands repeats ``repeats`` times back to back."""
    for period in range(1, max_period + 1):
        span = period * repeats
        for start in range(len(sequence) - span + 1):
            block = sequence[start : start + period]
            if all(sequence[start + k * period : start + (k + 1) * period] == block for k in range(1, repeats)):
                return True
    return False


def diversity_after_errors(runs: list[tuple[str, int | None]]) -> float | None:
    """Distinct commands / commands after the first non-zero exit; None when nothing failed."""
    first = next((i for i, (_, code) in enumerate(runs) if code not in (0, None)), None)
    if first is None or first + 1 >= len(runs):
        return None
    after = [command for command, _ in runs[first + 1 :]]
    return len(set(after)) / len(after)


def behaviour_metrics(trajectory: Trajectory, loop_repeats: int = DEFAULT_LOOP_REPEATS) -> dict[str, float]:
    runs = commands(trajectory)
    turns = len(trajectory.turns)
    tools = Counter(action["tool"] for turn in trajectory.turns for action in turn.actions)
    metrics: dict[str, float] = {
        "turns": turns,
        "loop": float(has_loop([c for c, _ in runs], loop_repeats)),
        "turn_exhaustion": float(trajectory.termination == Termination.MAX_TURNS),
        "parse_error_rate": sum(t.parse_error is not None for t in trajectory.turns) / turns if turns else 0.0,
        "commands": len(runs),
    }
    diversity = diversity_after_errors(runs)
    if diversity is not None:
        metrics["diversity_after_errors"] = diversity
    metrics.update({f"tool/{name}": float(n) for name, n in sorted(tools.items())})
    return metrics
