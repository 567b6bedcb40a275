"""task_set.format=procedural and a separate validation source: the learning proof's training tasks
and its held-out tasks of fresh parameters (no instruction of the training seed's)."""

import pytest

from terminal_rl.config import compose
from terminal_rl.preflight.checks import check_dataset
from terminal_rl.tasks.prepare import train_and_val
from terminal_rl.tasks.procedural import procedural_tasks
from terminal_rl.tasks.task_set import task_set_config, validation_source
from tests.support import SMALL_LIMITS

LEVELS = ["easy", "medium", "hard"]


def write_value_config(*overrides: str):
    return task_set_config(compose("evaluate", ["task_set=write_value", *overrides]).task_set)


def test_held_out_tasks_repeat_no_training_instruction_and_keep_their_count():
    train = procedural_tasks("write_value", 300, 0, LEVELS, SMALL_LIMITS)
    held_out = procedural_tasks("write_value", 60, 1, LEVELS, SMALL_LIMITS, exclude_seeds=[0], exclude_count=300)
    assert len(held_out) == 60 and [t.difficulty.value for t in held_out] == LEVELS * 20
    assert not {t.prompt for t in train} & {t.prompt for t in held_out}
    skewed_levels = ["easy", "medium", "hard", "hard"]
    skewed = procedural_tasks("write_value", 300, 0, skewed_levels, SMALL_LIMITS)
    apart = procedural_tasks(
        "write_value", 120, 1, LEVELS, SMALL_LIMITS, exclude_seeds=[0], exclude_count=300, exclude_levels=skewed_levels
    )
    assert not {t.prompt for t in skewed} & {t.prompt for t in apart}, "training levels other than held-out's"
    # Exactly the training tasks are excluded: most of the family's 200 one-word instructions stay.
    easy = {t.prompt for t in apart if t.difficulty.value == "easy"}
    assert len(easy) >= 30, f"40 held-out one-word tasks, {len(easy)} distinct instructions"
    short = procedural_tasks("write_value", 60, 1, LEVELS, SMALL_LIMITS, exclude_seeds=[0])
    assert {t.prompt for t in train} & {t.prompt for t in short}, "excluding 60 training draws, not 300"
    plain = procedural_tasks("write_value", 60, 1, LEVELS, SMALL_LIMITS)
    assert {t.prompt for t in train} & {t.prompt for t in plain}, "without the exclusion some repeat"
    assert all(t.metadata["mistake"] == t.solution.replace("/app/", "/tmp/") for t in held_out)
    with pytest.raises(ValueError, match=r"gave only \d+ of 3 tasks outside the excluded seeds \[0\]"):
        procedural_tasks(
            "write_value", 3, 1, ["easy"], SMALL_LIMITS, exclude_seeds=[0], exclude_count=4000, exclude_levels=["easy"]
        )
    with pytest.raises(ValueError, match="seed=0 is one of exclude_seeds"):
        procedural_tasks("write_value", 3, 0, LEVELS, SMALL_LIMITS, exclude_seeds=[0])


def test_a_held_out_task_whose_instruction_repeats_differs_in_its_files():
    """inbox_value's instructions name no parameter (one per level): held-out tasks share
    them with training tasks and are told apart by their inbox file, never a training task's."""

    def key(task):
        return task.prompt, tuple(sorted(task.files.items()))

    train = procedural_tasks("inbox_value", 960, 0, LEVELS, SMALL_LIMITS)
    held_out = procedural_tasks("inbox_value", 120, 1, LEVELS, SMALL_LIMITS, exclude_seeds=[0], exclude_count=960)
    assert len(held_out) == 120 and {t.prompt for t in held_out} <= {t.prompt for t in train}
    assert not {key(t) for t in train} & {key(t) for t in held_out}


def test_a_validation_source_replaces_the_split():
    split = write_value_config("task_set.procedural.count=30")
    train, val, problems = train_and_val(split)
    assert (len(train), len(val), problems) == (27, 3, [])
    config = write_value_config(
        "task_set.procedural.count=30",
        "+task_set.validation={procedural: {seed: 1, exclude_seeds: [0], exclude_count: 30, count: 9}}",
    )
    held = validation_source(config)
    assert held.procedural == {
        "count": 9,
        "seed": 1,
        "levels": LEVELS,
        "exclude_seeds": [0],
        "exclude_count": 30,
        "exclude_levels": None,
    }
    train, val, _ = train_and_val(config)
    assert len(train) == 30 and len(val) == 9
    assert not {t.prompt for t in train} & {t.prompt for t in val}
    assert {t.id.split("-s")[1][0] for t in val} == {"1"}


def test_unknown_validation_keys_are_named():
    config = write_value_config("+task_set.validation={seeds: 1}")
    with pytest.raises(ValueError, match=r"task_set.validation has unknown keys \['seeds'\]"):
        validation_source(config)


def test_an_empty_split_is_refused_by_preflight_before_any_work():
    def problems(*overrides):
        return check_dataset(compose("train", ["task_set=write_value", *overrides]))

    assert problems("task_set.procedural.count=8") == [
        "task_set write_value: the validation split has no valid task (task_set.val_fraction=0.1 of 8, rounded per "
        "difficulty): use more tasks, another task_set.val_fraction, or a task_set.validation source"
    ]
    assert problems("task_set.procedural.count=30") == []
    assert problems("task_set.procedural.count=8", "+task_set.validation={procedural: {seed: 1, count: 3}}") == []
