"""The metric names of training/metrics.py: each per-trajectory key the agent loop hands verl has one
step metric, the names the trainer logs come from the table, and docs/metrics.md is that table."""

import re

import pytest

from terminal_rl.agent.trajectory import Termination, Trajectory
from terminal_rl.config import PROJECT_ROOT
from terminal_rl.rewards.components import ComponentScore
from terminal_rl.rewards.mix import RewardMix
from terminal_rl.training.group_scoring import GroupScores
from terminal_rl.training.metrics import METRICS, RolloutInfo, is_ours_or_verls, metric_table, step_metrics
from terminal_rl.training.rollout_context import RolloutContext


def scores(filtered: bool) -> GroupScores:
    components = [
        {"tests": ComponentScore("tests", 1.0), "judge": ComponentScore("judge", 0.5)},
        {"tests": ComponentScore("tests", 0.0, {"forged": ["data.csv"]}), "judge": ComponentScore("judge", None)},
    ]
    return GroupScores(
        rewards=[0.9, 0.0],
        components=components,
        weights={"tests": 0.8, "judge": 0.2},
        judgements=[None, None],
        filter_signal=[0.2, 0.2] if filtered else None,
        filtered=filtered,
    )


def trajectory(score: float, termination: Termination) -> Trajectory:
    t = Trajectory("t1", "hash", "xml_yaml_v1", "terminal_agent")
    t.verification, t.termination = {"score": score}, termination.value
    RolloutContext("t1", "uid", 0, "train", 3, 2, RewardMix({"tests": 1.0})).stamp(t)
    return t


def test_a_trajectorys_numbers_reach_the_step_under_their_names():
    managed = trajectory(1.0, Termination.FINISHED)
    managed.metadata["context"] = {"config": {"policy": "elide"}, "segments": 3, "summaries": 0, "elided_tokens": 900}
    first = RolloutInfo.of(managed, scores(True), 0, loss_masked=False)
    second = RolloutInfo.of(trajectory(0.0, Termination.MAX_TURNS), scores(True), 1, loss_masked=True)
    assert second.components == {"tests": 0.0} and second.fixture_flagged and not first.fixture_flagged
    metrics = step_metrics([first.extra_info(), second.extra_info()])
    assert metrics["reward/tests_score"] == 0.5 and metrics["reward/pass_rate"] == 0.5
    assert metrics["reward/judge/mean"] == 0.5, "a missing component is left out of its mean"
    assert metrics["reward/weight/judge"] == pytest.approx(0.2)
    assert metrics["rollout/ended/max_turns"] == 0.5 and metrics["rollout/loss_masked_max_turns"] == 0.5
    assert metrics["rollout/fixture_flagged"] == 0.5 and metrics["rollout/filtered"] == 1.0
    assert metrics["rollout/variance_tests"] == 0.25 and metrics["rollout/zero_variance_tests"] == 0.0
    assert metrics["curriculum/drawn_stage"] == 2.0 and metrics["behaviour/turns"] == 0.0
    assert (metrics["context/segments"], metrics["context/elided_tokens"]) == (1.5, 450.0), "no record: 0 each"
    assert all(is_ours_or_verls(name) for name in metrics)


def test_verls_contract_numbers_only_and_no_reward_key():
    """verl reserves "reward" in reward_extra_info and validates "acc" per data source."""
    info = RolloutInfo.of(trajectory(0.5, Termination.TIMEOUT), scores(False), 0, loss_masked=False).extra_info()
    assert "reward" not in info and info["acc"] == 0.5
    assert all(isinstance(v, float) for v in info.values())
    assert "filter_signal" not in info, "no online filter, no filter metric"


def test_an_unknown_key_is_refused_not_renamed():
    with pytest.raises(KeyError, match="'surprise' is no extra_info key"):
        step_metrics([{"surprise": 1.0}])
    assert not is_ours_or_verls("reward/surprise")
    assert is_ours_or_verls("actor/pg_loss") and is_ours_or_verls("curriculum/share/easy")


def test_every_name_is_listed_once_and_the_doc_is_the_table():
    assert len({m.name for m in METRICS}) == len(METRICS)
    assert (PROJECT_ROOT / "docs" / "metrics.md").read_text() == metric_table(), (
        "python -m terminal_rl.training.metrics > docs/metrics.md"
    )


def test_every_metric_the_docs_name_is_one_a_run_logs():
    """Metric names in the README and docs/ (in backticks) are ``METRICS``' or verl's."""
    pattern = re.compile(r"`((?:reward|rollout|behaviour|curriculum|context|judge|advantage|training|ray)/[\w<>*/]+)`")
    named = {
        name
        for path in [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
        for name in pattern.findall(path.read_text(encoding="utf-8"))
    }
    assert "reward/judge_fallback_fraction" in named, "the docs name the run's metrics"
    unknown = [n for n in named if not is_ours_or_verls(re.sub(r"<\w+>|\*", "x", n))]
    assert unknown == []
