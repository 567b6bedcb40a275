"""The compact rendering of a trajectory the judge reads — the same in training, evaluation and
calibration. Long texts are truncated with markers that say how much was cut."""

from __future__ import annotations

from terminal_rl.agent.trajectory import Trajectory
from terminal_rl.tasks.dockerfile import base_images, instructions
from terminal_rl.tasks.model import Task


def truncate(text: str, limit: int) -> str:
    """Keep the first and last halves of ``limit`` characters, marking the cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters truncated ...]\n{text[-half:]}"


def describe_environment(task: Task) -> str:
    env = task.environment
    if env.dockerfile is None:
        return f"Container image {env.image}."
    workdirs = [args for keyword, args in instructions(env.dockerfile) if keyword == "WORKDIR"]
    return (
        f"Container built from {', '.join(base_images(env.dockerfile))}; working directory "
        f"{workdirs[-1] if workdirs else '/'}; the agent runs as root."
    )


def render_trajectory(trajectory: Trajectory, max_model_chars: int, max_observation_chars: int) -> str:
    """Turns as the judge sees them: the model's text, then what came back. Test results are left
    out on purpose: the judge grades the process, the verifier the outcome."""
    lines = [f"{len(trajectory.turns)} turns; the episode ended: {trajectory.termination}"]
    for turn in trajectory.turns:
        lines.append(f"\n### Turn {turn.index + 1}\n[agent]\n{truncate(turn.model_text, max_model_chars)}")
        if turn.parse_error:
            lines.append(f"[format error shown to the agent]\n{truncate(turn.parse_error, max_observation_chars)}")
        elif turn.observation is not None:
            lines.append(f"[result]\n{truncate(turn.observation, max_observation_chars)}")
    if trajectory.termination_detail:
        lines.append(f"\n[end] {trajectory.termination}: {truncate(trajectory.termination_detail, 300)}")
    return "\n".join(lines)


def judge_messages(rubric: str, task_prompt: str, environment: str, rendered: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": rubric},
        {
            "role": "user",
            "content": f"## Task\n{task_prompt}\n\n## Environment\n{environment}\n\n"
            f"## Trajectory\n{rendered}\n\nGrade it now: one JSON object only.",
        },
    ]
