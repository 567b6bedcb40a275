"""Tasks as rows of verl's RL dataset format (parquet), one row per task.

Row schema (what verl's ``RLHFDataset`` and agent loops read):
``prompt`` (chat messages), ``data_source``, ``agent_name`` (the agent loop to run),
``reward_model: {style, ground_truth}`` and ``extra_info`` with a :class:`TaskRef` into the task
store (``task_id``, ``content_hash``, ``task_store``) plus ``difficulty``, ``split`` and ``index``.
Nothing here imports verl: the format is plain data.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from terminal_rl.tasks.model import Task
from terminal_rl.tasks.store import TaskRef, TaskStore

REWARD_STYLE = "sandbox_verifier"


def task_row(
    task: Task, ref: TaskRef, *, split: str, index: int, data_source: str, agent_name: str, store: TaskStore
) -> dict:
    return {
        "data_source": data_source,
        "agent_name": agent_name,
        # The instruction as the first user message; the agent protocol adds its system prompt.
        "prompt": [{"role": "user", "content": task.prompt}],
        "reward_model": {"style": REWARD_STYLE, "ground_truth": f"{ref.task_id}@{ref.content_hash}"},
        "extra_info": {
            "task_id": ref.task_id,
            "content_hash": ref.content_hash,
            "task_store": str(store.root),
            "difficulty": task.difficulty.value,
            "split": split,
            "index": index,
        },
    }


def write_rows(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def read_refs(path: Path) -> list[tuple[TaskRef, Path]]:
    """(task ref, task store root) for every row of a dataset file."""
    extra = pq.read_table(path, columns=["extra_info"]).column("extra_info").to_pylist()
    return [(TaskRef(e["task_id"], e["content_hash"]), Path(e["task_store"])) for e in extra]


def tasks_from_parquet(path: Path) -> list[Task]:
    """Resolve every row of a dataset file to its task (hash-checked by the store)."""
    return [TaskStore(root).get(ref) for ref, root in read_refs(path)]
