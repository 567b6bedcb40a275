"""The warm start's cache and its hand-over to the evaluate app, in milliseconds (the whole chain runs in
tests/training/test_main_command.py)."""

import json

import pytest

from terminal_rl.config import compose
from terminal_rl.evaluate import select_tasks
from terminal_rl.preflight.job import train_job
from terminal_rl.tasks.prepare import train_and_val
from terminal_rl.tasks.task_set import task_set_config
from terminal_rl.training.warm_start import ensure_warm_start, procedural_overrides, settings
from tests.training.conftest import train_config


class Silent:
    def print(self, *args, **kwargs):
        raise AssertionError(f"a cached warm start prints nothing: {args}")


def cached(tmp_path, *overrides):
    cfg = train_config("experiment=learning_proof", f"run.output_root={tmp_path}", *overrides)
    model = tmp_path / cfg.warm_start.run_id / "sft" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    return cfg, model


def test_a_cache_made_with_these_settings_is_used_and_one_made_otherwise_is_refused(tmp_path):
    cfg, model = cached(tmp_path)
    record = model.parent.parent / "warm_start.json"
    record.write_text(json.dumps(settings(train_job(cfg).warm_start)))
    assert ensure_warm_start(train_job(cfg).warm_start, Silent()) == model
    other = train_config(
        "experiment=learning_proof",
        f"run.output_root={tmp_path}",
        "warm_start.mistake_share.hard=0.3",
        "task_set.procedural.count=480",
    )
    with pytest.raises(
        ValueError, match=r"made with other tasks, warm_start \(.*warm_start.json\): delete that folder"
    ):
        ensure_warm_start(train_job(other).warm_start, Silent())


def test_the_demonstrations_are_played_on_the_training_runs_own_tasks():
    """The evaluate app, given the warm start's overrides, selects exactly the run's training tasks (the
    preset alone would make its own 320 tasks under the same ids: other tasks once the levels differ)."""
    cfg = train_config(
        "experiment=learning_proof", "task_set.procedural.count=48", "task_set.procedural.levels=[hard,easy]"
    )
    train, _, _ = train_and_val(task_set_config(cfg.task_set))
    ids = [t.id for t in train]
    evaluate = compose(
        "evaluate",
        ["task_set=write_value", *procedural_overrides(task_set_config(cfg.task_set)), f"task_ids=[{','.join(ids)}]"],
    )
    assert [(t.id, t.prompt) for t in select_tasks(evaluate)] == [(t.id, t.prompt) for t in train]
    preset = compose("evaluate", ["task_set=write_value", f"task_ids=[{','.join(ids)}]"])
    assert [t.prompt for t in select_tasks(preset)] != [t.prompt for t in train], "the overrides matter"


def test_a_single_mistake_share_is_refused_by_name(tmp_path):
    cfg = train_config(
        "experiment=learning_proof",
        f"run.output_root={tmp_path}",
        "warm_start.mistake_share=0.6",
        "task_set.procedural.count=30",
    )
    with pytest.raises(ValueError, match=r"warm_start.mistake_share=0.6 must map levels to shares"):
        ensure_warm_start(train_job(cfg).warm_start, Silent())
