"""Run logs as tables: metrics merged over launches, trajectories, failure modes."""

import json

import pytest

from terminal_rl.analysis import columns, failure_modes, load_metrics, load_trajectories, validation_score


def write_lines(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def trajectory(task, termination, reward, masked=False):
    verification = None if termination == "timeout" else {"score": reward}
    return {
        "task_id": task,
        "termination": termination,
        "turns": [{}, {}],
        "verification": verification,
        "metadata": {"reward": reward, "masked": masked, "stage": 0},
    }


@pytest.fixture
def run_dir(tmp_path):
    logs = tmp_path / "logs"
    write_lines(
        logs / "metrics.20260101-000000.jsonl",
        [
            {"step": 1, "data": {"reward/tests/mean": 0.1, "reward/judge/mean": 0.5, "reward/weight/judge": 0.5}},
            {"step": 2, "data": {"reward/tests/mean": 0.2, "reward/judge/mean": 0.4}},
        ],
    )
    # The resume re-logs step 2 and goes on: the later launch wins.
    write_lines(
        logs / "metrics.20260101-010000.jsonl",
        [{"step": 2, "data": {"reward/tests/mean": 0.25}}, {"step": 3, "data": {"reward/tests/mean": 0.3}}],
    )
    write_lines(
        logs / "rollouts" / "train_step000001.77.jsonl",
        [trajectory("a", "finished", 1.0), trajectory("b", "parse_errors", 0.0)],
    )
    write_lines(
        logs / "rollouts" / "train_step000002.77.jsonl",
        [trajectory("a", "timeout", 0.0, masked=True), trajectory("b", "timeout", 0.0)],
    )
    write_lines(logs / "rollouts" / "val_step000002.77.jsonl", [trajectory("c", "finished", 1.0)])
    (logs / "rollouts" / "notes.txt").write_text("not a rollout file")
    return tmp_path


def test_metrics_merge_launches_and_later_launches_win(run_dir):
    metrics = load_metrics(run_dir)
    assert list(metrics.index) == [1, 2, 3]
    assert metrics.loc[2, "reward/tests/mean"] == 0.25 and metrics.loc[2, "reward/judge/mean"] == 0.4
    assert metrics["reward/weight/judge"].isna().tolist() == [False, True, True]


def test_columns_select_one_level_and_strip_the_name(run_dir):
    components = columns(load_metrics(run_dir), "reward/", "/mean")
    assert sorted(components.columns) == ["judge", "tests"]
    assert list(columns(load_metrics(run_dir), "reward/weight/").columns) == ["judge"]


def test_trajectories_and_failure_modes(run_dir):
    trajectories = load_trajectories(run_dir)
    assert len(trajectories) == 5 and set(trajectories["split"]) == {"train", "val"}
    assert trajectories["score"].fillna(-1).tolist() == [1.0, 0.0, -1, -1, 1.0], "the verifier's; NaN unverified"
    modes = failure_modes(trajectories)
    assert modes.loc[1, "finished"] == 0.5 and modes.loc[1, "parse_errors"] == 0.5 and modes.loc[2, "timeout"] == 1.0
    assert (modes.sum(axis=1) == 1.0).all()


def test_a_folder_without_metrics_is_named_in_the_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        load_metrics(tmp_path)


def test_validation_scores_are_verls_means_never_its_spread():
    """With 4 samples a task verl logs ``std@4`` beside ``mean@4`` (the second rung's first run showed
    its 0.068 spread as the pass rate); best/worst-of-n keys have another shape."""
    assert validation_score("val-aux/inbox_value/pass/mean@4") == ("inbox_value", "pass rate", "mean@4")
    assert validation_score("val-core/tbrl/acc/mean@1") == ("tbrl", "test score", "mean@1")
    assert validation_score("val-aux/inbox_value/pass/std@4") is None
    assert validation_score("val-core/inbox_value/acc/best@4/mean") is None
