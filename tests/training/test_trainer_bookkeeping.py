"""The trainer's step bookkeeping, as pure functions and objects (verl imported, nothing started):
mini-batches sized in sessions, one count per session, and the curriculum state a checkpoint carries."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from terminal_rl.integrations.verl.curriculum import RunCurriculum
from terminal_rl.integrations.verl.trainer import mini_batch_prompts, session_rows

pytestmark = pytest.mark.verl


@pytest.mark.parametrize(
    ("rows", "n", "dp", "mini_batches", "expected"),
    [
        (16, 4, 2, 1, 4),  # one row per session (append): the configured 4 prompts x 4 = 16 rows
        (53, 4, 2, 1, 14),  # per-turn rows: 53 rows fit one mini-batch of 14 x 4 = 56 rows (padded)
        (53, 4, 2, 2, 8),  # two mini-batches configured: two of 32 rows
        (3, 2, 1, 1, 2),
    ],
)
def test_mini_batches_are_sized_in_sessions(rows, n, dp, mini_batches, expected):
    size = mini_batch_prompts(rows, n, dp, mini_batches)
    assert size == expected
    rows_per_mini_batch = size * n  # what verl's _update_actor makes of it (TB l. 1829-1830)
    assert rows_per_mini_batch % dp == 0 and -(-rows // rows_per_mini_batch) <= mini_batches


def test_each_session_counts_once_by_its_last_row():
    keys = ["u1_0_0", "u1_0_1", "u1_0_2", "u1_1_0", "u2_0_1", "u2_0_0", "u2_1_0"]
    assert session_rows(keys) == [2, 3, 4, 6]


@pytest.fixture
def curriculum(tmp_path):
    rows = [{"extra_info": {"task_id": t, "difficulty": d}} for t, d in (("a", "easy"), ("b", "easy"), ("c", "hard"))]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "train.parquet")
    stages = [
        {"name": "first", "difficulty_weights": {"easy": 1}, "fraction": 0.5},
        {"name": "last", "difficulty_weights": {"hard": 1}},
    ]
    settings = {
        "curriculum": {"kind": "staged", "stages": stages},
        "data_filter": {"kind": "none"},
        "seed": 0,
        "image_report": str(tmp_path / "image_builds.json"),
        "total_training_steps": 4,
        "total_epochs": 1,
        "train_batch_size": 1,
    }
    return lambda: RunCurriculum(settings, str(tmp_path / "train.parquet"))


def test_the_gate_reads_the_samples_of_the_stage_drawn_in(curriculum):
    run = curriculum()
    run.record_step([("a", 0, 1.0), ("b", 0, 0.0), ("c", 1, 1.0)])  # a stale stage-1 sample is ignored
    assert run.gate_scores == (0.5, 0.5) and run.metrics()["curriculum/gate_test_score"] == 0.5


def test_a_checkpoint_without_curriculum_state_cannot_resume(curriculum, tmp_path):
    run = curriculum()
    for _ in range(2):
        run.next_task()
    run.record_step([("a", 0, 1.0)])
    run.record_step([("a", 0, 1.0)])
    saved = tmp_path / "global_step_2"
    saved.mkdir()
    run.save(saved)
    resumed = curriculum()
    resumed.restore(saved)
    assert (resumed.state, resumed.sampler.draws) == (run.state, 2) and resumed.state.stage == 1
    empty = tmp_path / "global_step_3"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="has no curriculum.json: its curriculum state .* is lost"):
        curriculum().restore(empty)


def test_tasks_whose_image_fails_leave_the_pool(curriculum, tmp_path):
    report = {
        "outcomes": [
            {"task_id": "a", "ok": False, "category": "other", "reason": "exit code 7"},
            {"task_id": "b", "ok": True, "category": "", "reason": ""},
        ]
    }
    (tmp_path / "image_builds.json").write_text(json.dumps(report))
    run = curriculum()
    assert run.sampler.unavailable == {"a"} and {run.next_task()[0] for _ in range(20)} == {"b"}


def test_an_episode_counts_the_pauses_its_model_calls_waited_out():
    """Async mode: each model call's overlap with the run's generation pauses, the call under way
    included, is what the episode's budget leaves out; in sync mode nothing is (and nothing is asked)."""
    import asyncio
    import time

    from terminal_rl.integrations.verl.agent_loop import PausedTime
    from terminal_rl.training.generation_pauses import GenerationPauses

    async def main():
        pauses = GenerationPauses()

        async def paused_between(start, end):
            return pauses.paused_between(start, end)

        paused, never = PausedTime(paused_between), PausedTime(None)
        async with paused.call():
            pauses.pause(time.time())
            await asyncio.sleep(0.2)
            during = await paused.seconds()
            pauses.resume(time.time())
        await asyncio.sleep(0.1)  # a sandbox command: not paused
        async with paused.call(), never.call():
            pass
        return during, await paused.seconds(), await never.seconds()

    during, after, never = asyncio.run(main())
    assert 0.15 < during < 0.3, "the call under way counts while it waits"
    assert abs(after - during) < 0.05, "the pause counted once, the command time not at all"
    assert never == 0.0
