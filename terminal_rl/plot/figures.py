"""A run's training curves as matplotlib figures, from its metrics and trajectories
(``terminal_rl.analysis``), drawn without pyplot. Each function returns a figure whose lines, bands and bars are
labelled
with the series they show (what the tests check); absent series are left out, never faked.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from terminal_rl.analysis import columns, failure_modes, validation_score

ROLLING_STEPS = 5


def _figure(title: str, panels: int = 1) -> tuple[Figure, list]:
    """A figure outside pyplot (no GUI backend, safe in any thread), laid out when saved."""
    fig = Figure(figsize=(5.5 * panels, 3.8), layout="constrained")
    axes = fig.subplots(1, panels, squeeze=False)
    fig.suptitle(title)
    return fig, list(axes[0])


def _steps(ax, ylabel: str) -> None:
    """An axis over training steps (whole numbers)."""
    ax.set(xlabel="step", ylabel=ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _lines(ax, frame: pd.DataFrame, ylabel: str, **style) -> None:
    for name in frame.columns:
        series = frame[name].dropna()
        if not series.empty:
            ax.plot(series.index, series.values, marker="o", markersize=3, label=name, **style)
    _steps(ax, ylabel)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small", loc="best")


def _present(metrics: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    return metrics[[n for n in names if n in metrics.columns]]


def reward(metrics: pd.DataFrame, trajectories: pd.DataFrame) -> Figure:
    """Mean reward per step, its rolling mean, and ±1σ of the step's trajectory rewards."""
    fig, [ax] = _figure("Reward per step")
    train = trajectories[(trajectories["split"] == "train") & ~trajectories["masked"]]
    per_step = train.groupby("step")["reward"].agg(["mean", "std"]).fillna(0.0)
    mean = metrics["critic/score/mean"].dropna() if "critic/score/mean" in metrics else per_step["mean"]
    ax.plot(mean.index, mean.values, marker="o", markersize=3, label="reward (step mean)")
    ax.plot(
        mean.index,
        mean.rolling(ROLLING_STEPS, min_periods=1).mean().values,
        color="black",
        label=f"rolling mean ({ROLLING_STEPS} steps)",
    )
    if not per_step.empty:
        ax.fill_between(
            per_step.index,
            per_step["mean"] - per_step["std"],
            per_step["mean"] + per_step["std"],
            alpha=0.2,
            label="±1σ over trajectories",
        )
    _steps(ax, "reward")
    ax.legend(fontsize="small")
    return fig


def reward_components(metrics: pd.DataFrame, trajectories: pd.DataFrame) -> Figure:
    fig, [ax] = _figure("Reward components (per-sample means)")
    _lines(ax, columns(metrics, "reward/", "/mean"), "mean")
    return fig


def tests(metrics: pd.DataFrame, trajectories: pd.DataFrame) -> Figure:
    """Test score and pass rate on training rollouts, and the validation scores verl logs."""
    fig, [train_ax, val_ax] = _figure("Tests: training and validation", 2)
    _lines(
        train_ax,
        _present(metrics, ["reward/tests_score", "reward/pass_rate"]).rename(
            columns={"reward/tests_score": "test score", "reward/pass_rate": "pass rate"}
        ),
        "train",
    )
    _lines(val_ax, validation_scores(metrics), "validation")
    return fig


def validation_scores(metrics: pd.DataFrame) -> pd.DataFrame:
    """verl's validation test score and pass rate, one column per data source."""
    names = {}
    for column in metrics.columns:
        parsed = validation_score(column)
        if parsed:
            source, kind, k = parsed
            names[column] = f"{kind} ({source}, {k})"
    return metrics[list(names)].rename(columns=names)


def optimisation(metrics: pd.DataFrame, trajectories: pd.DataFrame) -> Figure:
    fig, axes = _figure("Policy update", 3)
    for ax, name in zip(axes, ["actor/ppo_kl", "actor/entropy", "actor/grad_norm"]):
        _lines(ax, _present(metrics, [name]), name.split("/")[1])
    return fig


def lengths(metrics: pd.DataFrame, trajectories: pd.DataFrame) -> Figure:
    fig, [tokens, turns] = _figure("Lengths", 2)
    _lines(tokens, _present(metrics, ["response_length/mean", "prompt_length/mean"]), "tokens")
    _lines(turns, _present(metrics, ["num_turns/mean", "behaviour/turns"]), "turns")
    return fig


def zero_variance(metrics: pd.DataFrame, trajectories: pd.DataFrame) -> Figure:
    fig, [ax] = _figure("Groups without signal")
    _lines(
        ax,
        _present(
            metrics,
            [
                "rollout/zero_variance_tests",
                "rollout/zero_variance_reward",
                "rollout/masked_fraction",
                "rollout/filtered",
            ],
        ),
        "fraction",
    )
    ax.set_ylim(-0.05, 1.05)
    return fig


def curriculum(metrics: pd.DataFrame, trajectories: pd.DataFrame) -> Figure:
    fig, [stage, judge] = _figure("Curriculum", 2)
    _lines(stage, _present(metrics, ["curriculum/stage"]), "stage", drawstyle="steps-post")
    _lines(judge, columns(metrics, "curriculum/judge_weight/").add_prefix("judge weight "), "weight")
    return fig


def behaviour(metrics: pd.DataFrame, trajectories: pd.DataFrame) -> Figure:
    """How training episodes ended, and loops and parse errors."""
    fig, [ended, habits] = _figure("Terminations and behaviour", 2)
    modes = failure_modes(trajectories) if not trajectories.empty else pd.DataFrame()
    if not modes.empty:
        bottom = pd.Series(0.0, index=modes.index)
        for name in modes.columns:
            ended.bar(modes.index, modes[name], bottom=bottom, label=name)
            bottom += modes[name]
        ended.legend(fontsize="small")
    _steps(ended, "fraction of episodes")
    _lines(
        habits, _present(metrics, ["behaviour/loop", "behaviour/parse_error_rate", "behaviour/turn_exhaustion"]), "rate"
    )
    return fig


def reward_distribution(metrics: pd.DataFrame, trajectories: pd.DataFrame) -> Figure:
    """Trajectory rewards of the first and the second half of the run's steps."""
    fig, [ax] = _figure("Reward distribution")
    train = trajectories[(trajectories["split"] == "train") & ~trajectories["masked"]].dropna(subset=["reward"])
    if not train.empty:
        middle = train["step"].min() + (train["step"].max() - train["step"].min()) / 2
        for label, part in (
            ("first half", train[train["step"] <= middle]),
            ("second half", train[train["step"] > middle]),
        ):
            if not part.empty:
                ax.hist(part["reward"], bins=20, range=(0, 1), alpha=0.5, label=f"{label} ({len(part)})")
        ax.legend(fontsize="small")
    ax.set(xlabel="reward", ylabel="trajectories")
    return fig


FIGURES = {
    f.__name__: f
    for f in (
        reward,
        reward_components,
        tests,
        optimisation,
        lengths,
        zero_variance,
        curriculum,
        behaviour,
        reward_distribution,
    )
}


def compare(runs: dict[str, tuple[pd.DataFrame, pd.DataFrame]]) -> Figure:
    """Runs overlaid: reward (rolling mean), test score and pass rate."""
    fig, axes = _figure("Runs compared", 3)
    for name, (metrics, _) in runs.items():
        for ax, key in zip(axes, ["critic/score/mean", "reward/tests_score", "reward/pass_rate"]):
            if key in metrics:
                series = metrics[key].dropna()
                ax.plot(series.index, series.rolling(ROLLING_STEPS, min_periods=1).mean().values, label=name)
                _steps(ax, "")
                ax.set_title(key)
    for ax in axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    return fig
