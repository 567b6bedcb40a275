"""Every metric of ours a training run logs, named once (verl's own, ``actor/*``, ``critic/*``,
``timing_s/*`` ..., are verl's: ``VERL_PREFIXES``), and the typed hand-off that carries a
trajectory's numbers from the agent loop to the step's metrics.

The agent loop builds a ``RolloutInfo`` per trajectory and hands verl its ``extra_info()`` (verl's
``reward_extra_info``: flat, numbers only, no key named ``reward``); verl's validation reports those
keys per data source (``val-core/<source>/acc/...``, ``val-aux/<source>/<key>/...``), and the trainer
turns them into the step's means (``step_metrics``). ``docs/metrics.md`` is ``metric_table()``.

    python -m terminal_rl.training.metrics > docs/metrics.md
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from terminal_rl.agent.metrics import behaviour_metrics
from terminal_rl.agent.trajectory import Termination, Trajectory
from terminal_rl.filtering.variance import group_variances
from terminal_rl.training.group_scoring import GroupScores
from terminal_rl.training.rollout_context import RolloutContext


@dataclass(frozen=True)
class Metric:
    # As logged; <x> stands for a name filled in at run time (a component, a termination reason ...).
    name: str
    meaning: str
    # The per-trajectory key of ``RolloutInfo.extra_info()`` averaged into it, if it is one.
    extra_info: str = ""


METRICS: tuple[Metric, ...] = (
    Metric("reward/tests_score", "mean test score of the step's trajectories (0-1)", "acc"),
    Metric("reward/pass_rate", "share whose tests all passed", "pass"),
    Metric("reward/<component>/mean", "mean score of a reward component (where present)", "component_<component>"),
    Metric("reward/weight/<component>", "mean weight the reward mix gave a component", "weight_<component>"),
    Metric("reward/judge_fallback_fraction", "share whose group fell back to the tests", "judge_fallback"),
    Metric("reward/judge_skipped_fraction", "share whose group skipped the judge", "judge_skipped"),
    Metric("rollout/masked_fraction", "share in a masked group (no token trained)", "masked"),
    Metric("rollout/variance_reward", "mean variance of the reward within a group", "variance_reward"),
    Metric("rollout/variance_tests", "mean variance of the test score within a group", "variance_tests"),
    Metric("rollout/zero_variance_reward", "share in a group of equal rewards", "zero_variance_reward"),
    Metric("rollout/zero_variance_tests", "share in a group of equal test scores", "zero_variance_tests"),
    Metric("rollout/filter_signal", "the online filter's signal (a group's variance or pass rate)", "filter_signal"),
    Metric("rollout/filtered", "share in a group the online filter dropped", "filtered"),
    Metric(
        "rollout/fixture_flagged",
        "share whose tests read an input the agent rewrote",
        "fixture_flagged",
    ),
    Metric("rollout/ended/<reason>", "share that ended for a reason (Termination)", "end_<reason>"),
    Metric(
        "rollout/loss_masked_<reason>",
        "share of trajectories masked for a truncating reason (credit.mask_truncated)",
        "loss_masked_<reason>",
    ),
    Metric("curriculum/drawn_stage", "mean curriculum stage of the step's draws", "stage"),
    Metric(
        "context/<name>",
        "agent.context per episode: segments (training samples' prompts rewritten), summaries written, "
        "elided_tokens (observation tokens replaced by stubs); still out of context: rollout/ended/context_exhausted",
        "context_<name>",
    ),
    Metric(
        "behaviour/<name>",
        "turns, commands, loops, parse errors (agent/metrics.py)",
        "behaviour_<name>",
    ),
    Metric(
        "curriculum/groups_consumed",
        "groups the step consumed (trained on or evicted), each once, recorded by the curriculum",
    ),
    Metric("curriculum/<name>", "the curriculum's state: stage, steps in stage, gate scores, pool, shares"),
    Metric("judge/<name>", "the judge service's counts: requests, calls, cache hits, tokens, cost, latency"),
    Metric("advantage/abs_mean", "mean absolute advantage over the step's trained tokens (all estimators)"),
    Metric("advantage/turn_<turn>/<statistic>", "per-turn advantages (adv_estimator=mt_grpo)"),
    Metric("advantage/turn_spread", "mean spread of advantages across a session's turns (mt_grpo)"),
    Metric("training/mini_batch_rows", "rows per mini-batch this step (sized in sessions)"),
    Metric("training/optimizer_steps", "optimizer steps this step took"),
    Metric("ray/actor_nodes", "Ray nodes the actor workers run on"),
    Metric(
        "rollout/in_flight_while_training",
        "rollouts=async: groups still generating when the step began training (rollout/train overlap)",
    ),
    Metric("rollout/samples", "a table of a few trajectories (wandb only)"),
)
# verl's own metrics (its trainer, engines and rollout correction), logged as verl names them.
VERL_PREFIXES = (
    "actor/",
    "critic/",
    "timing_s/",
    "timing_per_token_ms/",
    "perf/",
    "global_seqlen/",
    "prompt_length/",
    "response_length/",
    "response_length_non_aborted/",
    "response/",
    "num_turns/",
    "rollout_corr/",
    "training/epoch",
    "training/global_step",
    "training/num_turns/",
    "training/off_policy/",
    "training/filter_groups/",
    "training/rollout_",
    "val-core/",
    "val-aux/",
)


@dataclass(frozen=True)
class RolloutInfo:
    """One trajectory's numbers for the step's metrics (each field is one ``METRICS`` entry)."""

    tests_score: float  # 0-1
    passed: bool
    components: dict[str, float]  # present components only
    weights: dict[str, float]
    masked: bool
    variance_reward: float
    variance_tests: float
    zero_variance_reward: bool
    zero_variance_tests: bool
    filter_signal: float | None  # None: no online filter
    filtered: bool | None
    fixture_flagged: bool
    judge_fallback: bool
    judge_skipped: bool
    stage: int
    termination: str
    loss_masked: bool  # a truncated trajectory trained none of its tokens (credit.mask_truncated)
    behaviour: dict[str, float]
    context: dict[str, float]  # segments, summaries, elided_tokens (agent.context)

    @classmethod
    def of(cls, trajectory: Trajectory, scores: GroupScores, position: int, loss_masked: bool) -> RolloutInfo:
        tests = [c["tests"].score or 0.0 for c in scores.components]
        variance_reward, variance_tests = group_variances(scores.rewards, tests)
        score = float((trajectory.verification or {}).get("score", 0.0))
        return cls(
            tests_score=score,
            passed=score == 1.0,
            components={n: float(c.score) for n, c in scores.components[position].items() if not c.missing},
            weights={n: float(w) for n, w in scores.weights.items()},
            masked=scores.masked,
            variance_reward=variance_reward,
            variance_tests=variance_tests,
            zero_variance_reward=variance_reward == 0.0,
            zero_variance_tests=variance_tests == 0.0,
            filter_signal=None if scores.filter_signal is None else scores.filter_signal[position],
            filtered=None if scores.filter_signal is None else scores.filtered,
            fixture_flagged="forged" in scores.components[position]["tests"].details,
            judge_fallback=scores.judge_fallback,
            judge_skipped=scores.judge_skipped,
            stage=RolloutContext.of(trajectory).stage,
            termination=trajectory.termination,
            loss_masked=loss_masked,
            behaviour={
                k.replace("/", "_"): float(v)
                for k, v in behaviour_metrics(trajectory).items()
                if not k.startswith("tool/")
            },
            context={
                name: float(trajectory.metadata.get("context", {}).get(name, 0))
                for name in ("segments", "summaries", "elided_tokens")
            },
        )

    def extra_info(self) -> dict[str, float]:
        """verl's ``reward_extra_info``: flat keys (``METRICS``' ``extra_info``), numbers only."""
        info = {
            "acc": self.tests_score,
            "pass": float(self.passed),
            **{f"component_{name}": score for name, score in self.components.items()},
            **{f"weight_{name}": weight for name, weight in self.weights.items()},
            "masked": float(self.masked),
            "variance_reward": self.variance_reward,
            "variance_tests": self.variance_tests,
            "zero_variance_reward": float(self.zero_variance_reward),
            "zero_variance_tests": float(self.zero_variance_tests),
            "fixture_flagged": float(self.fixture_flagged),
            "judge_fallback": float(self.judge_fallback),
            "judge_skipped": float(self.judge_skipped),
            "stage": float(self.stage),
            **{f"end_{reason.value}": float(self.termination == reason.value) for reason in Termination},
            **{
                f"loss_masked_{reason.value}": float(self.loss_masked and self.termination == reason.value)
                for reason in Termination
                if reason.truncated
            },
            **{f"behaviour_{name}": value for name, value in self.behaviour.items()},
            **{f"context_{name}": value for name, value in self.context.items()},
        }
        if self.filter_signal is not None:
            info["filter_signal"], info["filtered"] = self.filter_signal, float(bool(self.filtered))
        return info


def metric_name(key: str) -> str:
    """The step metric an ``extra_info`` key is averaged into (``METRICS``); an unknown key is an error."""
    for metric in METRICS:
        pattern = metric.extra_info
        if not pattern:
            continue
        if "<" not in pattern:
            if key == pattern:
                return metric.name
            continue
        prefix = pattern[: pattern.index("<")]
        if key.startswith(prefix) and len(key) > len(prefix):
            filled = key[len(prefix) :]
            return metric.name[: metric.name.index("<")] + filled + metric.name[metric.name.index(">") + 1 :]
    raise KeyError(f"{key!r} is no extra_info key of terminal_rl/training/metrics.py METRICS")


def step_metrics(infos: list[dict[str, float]]) -> dict[str, float]:
    """Means of the step's ``extra_info`` numbers (one per session) under their metric names."""
    values: dict[str, list[float]] = defaultdict(list)
    for info in infos:
        for key, value in info.items():
            values[metric_name(key)].append(float(value))
    return {name: sum(series) / len(series) for name, series in values.items()}


def is_ours_or_verls(name: str) -> bool:
    """Whether a logged metric name is one of ``METRICS`` (a ``<placeholder>`` stands for any text) or
    verl's."""
    return name.startswith(VERL_PREFIXES) or any(
        re.fullmatch(".+".join(map(re.escape, re.split(r"<\w+>", metric.name))), name) for metric in METRICS
    )


def metric_table() -> str:
    """``docs/metrics.md``: the metrics of ours a run logs, from ``METRICS``."""
    lines = [
        "# Metrics a training run logs",
        "",
        "Generated from `terminal_rl/training/metrics.py` (`python -m terminal_rl.training.metrics > docs/metrics.md`;",
        "a test holds the two equal). verl's own metrics keep verl's names: "
        + ", ".join(f"`{p}`" for p in VERL_PREFIXES)
        + ".",
        "",
        "| metric | meaning | per-trajectory key (`reward_extra_info`) |",
        "| --- | --- | --- |",
    ]
    lines += [f"| `{m.name}` | {m.meaning} | {f'`{m.extra_info}`' if m.extra_info else ''} |" for m in METRICS]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(metric_table(), end="")
