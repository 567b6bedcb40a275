"""``rollouts=async`` end to end on CPU, 2 steps (the asynchronous-rollouts benchmark's smoke:
``benchmarks/async_rollouts.py``'s experiment, its tasks' checks shortened): verl's colocate_async
trainer with our trainer steps, agent loop and CPU rollout server, real sandboxes, LoRA (rank 8, its
weights merged into the rollout server after each update). Each step trains on
the groups that finished first while the others keep running; what must hold in async mode is read
from the run's own logs."""

import json
import os
import re
import subprocess
import sys

import pytest

from terminal_rl.analysis import load_metrics
from terminal_rl.config import PROJECT_ROOT
from terminal_rl.sandbox.lifecycle.owner import MANAGED, RUN_ID
from terminal_rl.sandbox.runtime.docker_client import docker_client

pytestmark = [pytest.mark.docker, pytest.mark.verl]

STALENESS = "training/off_policy/trajectory_staleness_worst"


@pytest.fixture(scope="module")
def async_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("async")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VERL_", "TERMINAL_RL_RUN"))}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "terminal_rl.train",
            "experiment=async_rollouts",
            "rollouts=async",
            "trainer.total_training_steps=2",
            "async_rollouts.max_staleness=1",
            "task_set=write_value",
            "task_set.procedural.count=30",
            "model.lora.rank=8",
            f"run.output_root={root}",
            "run.id=async",
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return root / "async", result.stdout


def test_async_steps_train_on_finished_groups_with_bounded_staleness(async_run):
    folder, console = async_run
    metrics = load_metrics(folder)
    assert list(metrics.index) == [1, 2]
    for step, row in metrics.iterrows():
        # verl's staleness, from the weights versions the rollout server stamped on each reply.
        assert 0 <= row[f"{STALENESS}/mean"] <= row[f"{STALENESS}/max"] <= 1, "max_staleness=1"
        assert row["rollout_corr/rollout_is_mean"] > 0, "importance weights against the rollout's own log-probs"
        assert row["curriculum/groups_consumed"] >= 2, "the groups the step trained on reached the curriculum"
    assert metrics.loc[2, f"{STALENESS}/max"] == 1, (
        "step 2 trained on groups written by the weights before step 1's update: generation ran on while it trained"
    )
    assert metrics["curriculum/groups_consumed"].sum() <= 2 * 3, (
        "no more than issued: a prefetched batch and one a step"
    )
    steps = [line for line in console.splitlines() if re.match(r"step \d/2 ", line)]
    assert len(steps) == 2 and all(
        re.search(r"\| stale [\d.]+/\d+  in flight \d+ groups while training$", s) for s in steps
    )


def test_async_logs_each_episode_once_and_leaves_no_sandbox(async_run):
    folder, _ = async_run
    sessions = [
        (record["metadata"]["uid"], record["metadata"]["session"])
        for path in (folder / "logs" / "rollouts").glob("train_step*.jsonl")
        for record in map(json.loads, path.read_text().splitlines())
    ]
    assert len(sessions) >= 8 and len(set(sessions)) == len(sessions)
    versions = [
        sample["weights_versions"]
        for path in (folder / "logs" / "rollouts").glob("train_step*.jsonl")
        for record in map(json.loads, path.read_text().splitlines())
        for sample in record["metadata"]["samples"]
    ]
    # Stamped by the rollout server on its replies (null where it stamped none, the trainer's fallback):
    # weights 0 before the first update, 1 after it.
    assert versions and all(first is not None and 0 <= first <= last <= 1 for first, last in versions), versions
    assert [0, 0] in versions, versions
    left = docker_client().containers.list(all=True, filters={"label": [f"{MANAGED}=1", f"{RUN_ID}=async"]})
    assert left == [], "the groups in flight at the end do not leave their sandboxes behind"
