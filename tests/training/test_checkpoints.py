"""On-disk checkpoint retention: what verl's in-memory list cannot see (an earlier attempt's saves)."""

from terminal_rl.training.checkpoints import enforce_retention, saved_steps, stale_steps


def test_only_the_newest_are_kept_and_never_the_marked_one():
    assert stale_steps([10, 20, 30, 40], 2, 40) == [10, 20]
    assert stale_steps([10, 20, 30, 40], 2, 10) == [20], "the step verl's marker names stays"
    assert stale_steps([10, 20, 30], None, 30) == [] and stale_steps([10, 20], 0, 20) == []


def test_a_resumed_runs_earlier_saves_are_removed(tmp_path):
    for step in (1, 2, 3, 4):  # 1-2 from the first attempt, 3-4 from the resumed one
        (tmp_path / f"global_step_{step}" / "actor").mkdir(parents=True)
    (tmp_path / "global_step_x").mkdir()
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("4")
    assert enforce_retention(tmp_path, 3) == [1]
    assert saved_steps(tmp_path) == [2, 3, 4] and (tmp_path / "global_step_x").is_dir()
