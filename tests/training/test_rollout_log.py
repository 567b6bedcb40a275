"""A resume's reissued groups count once in the rollout log (training/rollout_log.py)."""

import json

from terminal_rl.training.rollout_log import supersede


def line(uid: str, session: int) -> str:
    return json.dumps({"task_id": "t", "metadata": {"uid": uid, "session": session}})


def test_what_a_killed_attempt_logged_after_its_checkpoint_moves_aside(tmp_path):
    """Resumed at step 4 (checkpoint of step 3): group a was in flight at the checkpoint and runs
    again; step 4's groups were issued after it and run again too."""
    (tmp_path / "train_step000003.11.jsonl").write_text(line("a", 0) + "\n" + line("b", 0) + "\n" + line("a", 1) + "\n")
    (tmp_path / "train_step000004.11.jsonl").write_text(line("c", 0) + "\n")
    (tmp_path / "val_step000004.11.jsonl").write_text(line("a", 0) + "\n")
    assert supersede(tmp_path, {"a", "x"}, resumed_step=4) == 3
    assert (tmp_path / "train_step000003.11.jsonl").read_text() == line("b", 0) + "\n"
    superseded = tmp_path / "superseded"
    assert (superseded / "train_step000003.11.jsonl").read_text() == line("a", 0) + "\n" + line("a", 1) + "\n"
    assert (superseded / "train_step000004.11.jsonl").read_text() == line("c", 0) + "\n"
    assert not (tmp_path / "train_step000004.11.jsonl").exists()
    assert (tmp_path / "val_step000004.11.jsonl").read_text() == line("a", 0) + "\n", "validation is never reissued"
    assert supersede(tmp_path, {"a"}, resumed_step=4) == 0, "nothing twice"
