"""The driver's console in milliseconds: a validation's results print after its last progress line,
though the rollout logs and the metrics file are polled by two threads."""

from __future__ import annotations

from types import SimpleNamespace

from terminal_rl.console import ValidationProgress
from terminal_rl.integrations.verl import curriculum, driver


def test_validation_results_follow_its_last_progress_line(tmp_path, monkeypatch):
    monkeypatch.setattr(curriculum, "run_schedule", lambda data: (None, 2))
    shown = []
    console = SimpleNamespace(print=shown.append)
    validation_progress = ValidationProgress(tmp_path, 2, shown.append, every_sec=3600)
    on_step = driver.progress(console, SimpleNamespace(data=None), validation_progress)
    # The validation's last episodes and its metrics record land within one polling interval, and
    # the metrics follower polls first.
    tmp_path.joinpath("val_step000000.5.jsonl").write_text("{}\n{}\n")
    on_step(0, {"val-core/write_value/acc/mean@1": 0.5})
    assert shown == ["  validation @ step 0: 2/2 episodes", "  validation @ step 0: write_value test score 0.500"]
    validation_progress.poll()
    assert len(shown) == 2, "the count is not shown twice"
