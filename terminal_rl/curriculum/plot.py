"""Plot a schedule: difficulty mix and judge weights against training steps (PNG).

Stages are assumed to run to their ``max_steps`` (performance gates can only shorten them), the last
to the end of the run; the training run saves the same plot for the schedule it actually used.
"""

from __future__ import annotations

from pathlib import Path

from terminal_rl.curriculum.schedule import DIFFICULTIES, CurriculumState, Schedule


def timeline(schedule: Schedule, total_steps: int) -> list[int]:
    """The stage index at each of the run's ``total_steps`` steps."""
    stages = []
    for index, stage in enumerate(schedule.stages):
        stages += [index] * (stage.max_steps or max(0, total_steps - len(stages)))
    return stages[:total_steps]


def plot_schedule(schedule: Schedule, name: str, out: Path, total_steps: int) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = timeline(schedule, total_steps)
    mixes = [schedule.difficulty_mix(CurriculumState(s)) or {d: 0.25 for d in DIFFICULTIES} for s in steps]
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    top.stackplot(range(len(steps)), *[[m[d] for m in mixes] for d in DIFFICULTIES], labels=DIFFICULTIES, alpha=0.8)
    top.set_ylabel("sampling share")
    top.set_title(f"curriculum={name}: difficulty mix and reward weights")
    top.legend(loc="upper right", fontsize=8)
    for difficulty in DIFFICULTIES:
        judge = [schedule.judge_weight(s, difficulty) for s in steps]
        if any(j is not None for j in judge):
            bottom.step(
                range(len(steps)), [j or 0.0 for j in judge], where="post", label=f"judge weight ({difficulty})"
            )
    expected = [sum(m[d] * (schedule.judge_weight(s, d) or 0.0) for d in DIFFICULTIES) for s, m in zip(steps, mixes)]
    bottom.plot(range(len(steps)), expected, color="black", linewidth=2, label="judge weight, batch average")
    bottom.plot(
        range(len(steps)), [1 - e for e in expected], color="black", linestyle="--", label="tests weight, batch average"
    )
    bottom.set_ylim(-0.02, 1.02)
    bottom.set_xlabel("training step (each stage at its maximum length)")
    bottom.set_ylabel("reward weight")
    bottom.legend(loc="center right", fontsize=8)
    for boundary in [i for i in range(1, len(steps)) if steps[i] != steps[i - 1]]:
        for axis in (top, bottom):
            axis.axvline(boundary, color="grey", linewidth=0.8, linestyle=":")
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return out
