import json

import pyarrow.parquet as pq
import pytest

from terminal_rl.run_context import RunConfig, RunContext
from terminal_rl.tasks.loaders.tbrl_csv import load_tbrl_csv
from terminal_rl.tasks.model import task_from_json, task_to_json
from terminal_rl.tasks.prepare import prepare_task_set
from terminal_rl.tasks.splits import split_by_difficulty
from terminal_rl.tasks.store import TaskHashMismatch, TaskRef, TaskStore
from terminal_rl.tasks.verl_rows import read_refs, tasks_from_parquet


@pytest.fixture(scope="module")
def tasks(tbrl_csv, default_limits):
    return load_tbrl_csv(tbrl_csv, default_limits).tasks


@pytest.fixture(scope="module")
def prepared(tbrl_task_set, tmp_path_factory):
    run = RunContext.from_config(
        RunConfig(id="t", output_root=str(tmp_path_factory.mktemp("out")), node_local_root="/tmp/x")
    )
    return prepare_task_set(tbrl_task_set, run, agent_name="terminal_agent"), run


def test_json_round_trip_keeps_bytes_and_hash(tasks):
    for task in tasks:
        again = task_from_json(task_to_json(task))
        assert again == task
        assert again.content_hash == task.content_hash


def test_hash_ignores_source_but_not_content(tasks):
    task = tasks[0]
    assert task.with_source("elsewhere").content_hash == task.content_hash
    from dataclasses import replace

    assert replace(task, prompt=task.prompt + " ").content_hash != task.content_hash


def test_csv_to_parquet_to_task_round_trip(prepared, tasks):
    result, run = prepared
    by_id = {t.id: t for t in tasks}
    back = tasks_from_parquet(result.train_file) + tasks_from_parquet(result.val_file)
    assert len(back) == 328
    for task in back:
        assert task == by_id[task.id].with_source(task.source)
        assert task.content_hash == by_id[task.id].content_hash


def test_rows_carry_a_reference_not_the_task(prepared):
    result, run = prepared
    table = pq.read_table(result.train_file)
    assert set(table.column_names) == {"data_source", "agent_name", "prompt", "reward_model", "extra_info"}
    row = table.slice(0, 1).to_pylist()[0]
    assert row["prompt"][0]["role"] == "user"
    assert row["agent_name"] == "terminal_agent" and row["data_source"] == "terminal_bench_rl"
    assert set(row["extra_info"]) == {"task_id", "content_hash", "task_store", "difficulty", "split", "index"}
    assert row["extra_info"]["task_store"] == str(run.task_store_dir)
    assert row["reward_model"]["ground_truth"] == f"{row['extra_info']['task_id']}@{row['extra_info']['content_hash']}"
    assert "dockerfile" not in json.dumps(row)
    report = json.loads(result.report_file.read_text())
    assert report["counts"]["train"]["easy"] + report["counts"]["val"]["easy"] == 39
    assert report["rejected"] == []


def test_tampered_store_fails_loudly(prepared):
    result, run = prepared
    ref, root = read_refs(result.val_file)[0]
    store = TaskStore(root)
    record = root / ref.task_id / f"{ref.content_hash}.json"
    data = json.loads(record.read_text())
    data["prompt"] += " (edited)"
    record.write_text(json.dumps(data))
    with pytest.raises(TaskHashMismatch, match=rf"holds '{ref.task_id}' with hash .* but the dataset row expects"):
        store.get(ref)
    with pytest.raises(FileNotFoundError, match="is not in the task store"):
        store.get(TaskRef(ref.task_id, "0" * 64))


def test_split_is_stratified_deterministic_and_seeded(tasks):
    train, val = split_by_difficulty(tasks, 0.1, seed=0)
    assert len(train) + len(val) == 328 and not {t.id for t in train} & {t.id for t in val}
    assert sorted(t.difficulty.value for t in val).count("easy") == 4  # round(0.1 * 39)
    assert sorted(t.difficulty.value for t in val).count("medium") == 14
    again_train, again_val = split_by_difficulty(list(reversed(tasks)), 0.1, seed=0)
    assert [t.id for t in again_val] == [t.id for t in val]
    _, other_val = split_by_difficulty(tasks, 0.1, seed=1)
    assert [t.id for t in other_val] != [t.id for t in val]
    with pytest.raises(ValueError, match=r"val_fraction=1.0 must be in \[0, 1\)"):
        split_by_difficulty(tasks, 1.0, seed=0)
