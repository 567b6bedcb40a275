"""``rollouts=async`` end to end on CPU: the asynchronous-rollouts benchmark's 2-step smoke, then a
kill and a resume on top of it. The benchmark's experiment (``benchmarks/async_rollouts.py``) with
its tasks' checks shortened and its sequences too (the one-command protocol's 92-token system prompt,
not xml_yaml's 573, and 32-token turns: the actor's passes scale with them): verl's colocate_async
trainer with our trainer steps, agent loop and CPU rollout server, real sandboxes, LoRA (rank 8, its
weights merged into the rollout server after each update). Each step trains on the groups that
finished first while the others keep running. The first launch is SIGKILLed once step 2 is
checkpointed and logged (step 3's groups in flight): its two steps are the smoke. A second launch
resumes it for step 3. What must hold in async mode is read from the run's own logs."""

import json
import re
import signal
import subprocess

import pytest

from terminal_rl.analysis import load_metrics
from terminal_rl.sandbox.lifecycle.owner import MANAGED, RUN_ID
from terminal_rl.sandbox.runtime.docker_client import docker_client
from tests.support import launch_training

# Two launches of Ray and verl in one module fixture: more than the suite's default 900 s under load.
pytestmark = [pytest.mark.docker, pytest.mark.verl, pytest.mark.timeout(1800)]

STALENESS = "training/off_policy/trajectory_staleness_worst"


def step_logged(folder, step: int) -> bool:
    """Whether ``step`` is checkpointed and its metrics line written."""
    marker = folder / "checkpoints" / "latest_checkpointed_iteration.txt"
    if not (marker.is_file() and marker.read_text().strip() == str(step)):
        return False
    lines = [line for path in (folder / "logs").glob("metrics.*.jsonl") for line in path.read_text().splitlines()]
    return any(re.match(rf'{{"step": ?{step},', line) for line in lines)


def launch(root, kill_after_step: int | None = None) -> subprocess.CompletedProcess:
    overrides = [
        "experiment=async_rollouts",
        "rollouts=async",
        "trainer.total_training_steps=3",
        "trainer.save_freq=1",
        "async_rollouts.max_staleness=1",
        "task_set=write_value",
        "task_set.procedural.count=30",
        "model.lora.rank=8",
        "agent=bash_only",
        "logger=console",  # wandb's service start and teardown are not what this tests
        "model.context.max_tokens_per_turn=32",
        # The actor in the rollout server's dtype, so step 1's on-policy log-probs agree to rounding
        # (in bf16, where the CPU has it, they differ by ~1e-3 nats).
        "hardware.param_dtype=fp32",
        f"run.output_root={root}",
        "run.id=async",
    ]
    kill_when = (lambda: step_logged(root / "async", kill_after_step)) if kill_after_step else None
    return launch_training(overrides, root / f"launch{kill_after_step or ''}", kill_when=kill_when, timeout=900)


def rollout_records(folder) -> list[dict]:
    return [
        record
        for path in sorted((folder / "logs" / "rollouts").glob("train_step*.jsonl"))
        for record in map(json.loads, path.read_text().splitlines())
    ]


@pytest.fixture(scope="module")
def two_steps(tmp_path_factory):
    """The 2-step smoke: the first launch, SIGKILLed once step 2 is checkpointed and logged."""
    root = tmp_path_factory.mktemp("async")
    killed = launch(root, kill_after_step=2)
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-4000:] + killed.stderr[-4000:]
    return root / "async", killed.stdout


@pytest.fixture(scope="module")
def resumed(two_steps):
    """The second launch, resuming the killed run for step 3 (after the 2-step smoke's tests)."""
    folder, _ = two_steps
    run = launch(folder.parent)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    return folder, run.stdout


def test_async_steps_train_on_finished_groups_with_bounded_staleness(two_steps):
    folder, console = two_steps
    metrics = load_metrics(folder)
    assert list(metrics.index) == [1, 2]
    for step, row in metrics.iterrows():
        # verl's staleness, from the weights versions the rollout server stamped on each reply.
        assert 0 <= row[f"{STALENESS}/mean"] <= row[f"{STALENESS}/max"] <= 1, "max_staleness=1"
        assert row["rollout_corr/rollout_is_mean"] > 0, "importance weights against the rollout's own log-probs"
        assert row["curriculum/groups_consumed"] == 2, "the groups the step trained on reached the curriculum"
    # Step 1's samples are on-policy (weights 0): the rollout's own log-probs match the trainer's
    # recomputed ones, so the importance weights correct only what staleness moves.
    on_policy = metrics.loc[1, ["rollout_corr/kl", "rollout_corr/k3_kl"]]
    assert on_policy.abs().max() < 1e-4, on_policy  # k3 is >= 0: errors cannot cancel in it
    assert metrics.loc[2, f"{STALENESS}/max"] == 1, (
        "step 2 trained on groups written by the weights before step 1's update: generation ran on while it trained"
    )
    # The console prints a step's line when it next reads the metrics (each second): the killed launch
    # may die before printing step 2's.
    steps = [line for line in console.splitlines() if re.match(r"step \d/3 ", line)]
    assert {s[:8] for s in steps} >= {"step 1/3"} and all(
        re.search(r"\| stale [\d.]+/\d+  in flight \d+ groups while training$", s) for s in steps
    ), steps


def test_each_sample_records_the_weights_versions_the_server_stamped(two_steps):
    folder, _ = two_steps
    samples = [sample for record in rollout_records(folder) for sample in record["metadata"]["samples"]]
    versions = [sample["weights_versions"] for sample in samples]
    # Stamped by the rollout server on its replies (null where it stamped none, the trainer's fallback):
    # weights 0 before the first update, then one more each step.
    assert versions and all(first is not None and 0 <= first <= last <= 2 for first, last in versions), versions
    assert [0, 0] in versions, versions
    for sample in samples:  # each model turn tagged; the sample spans its turns
        turns = sample["turn_versions"]
        assert turns and None not in turns and [turns[0][0], turns[-1][1]] == sample["weights_versions"], sample


def test_a_killed_run_resumes_its_groups_in_flight_and_counts_each_once(resumed):
    """verl restores the checkpoint's prompt groups from TransferQueue and generates again those in
    flight (``trainer/ppo/v1/trainer_base.py`` l. 900-946); the ledger's record of a group replaces the
    killed attempt's, so step 3 consumes exactly its batch, as an uninterrupted run does."""
    folder, console = resumed
    log = (folder / "logs" / "train.log").read_text()
    [restored] = re.findall(
        r"Restored (\d+) training prompt groups from TransferQueue", log.rsplit("==== terminal_rl launch", 1)[1]
    )
    assert int(restored) >= 1, "the prefetched groups were in the checkpoint"
    metrics = load_metrics(folder)
    assert metrics["curriculum/groups_consumed"].tolist() == [2, 2, 2], "train_batch_size groups a step, once each"
    assert metrics.loc[3, f"{STALENESS}/max"] <= 1
    assert any(line.startswith("step 3/3 ") for line in console.splitlines()), console[-2000:]
    sessions = [(record["metadata"]["uid"], record["metadata"]["session"]) for record in rollout_records(folder)]
    assert len(sessions) >= 8 and len(set(sessions)) == len(sessions), "a reissued group's killed attempt set aside"
    left = docker_client().containers.list(all=True, filters={"label": [f"{MANAGED}=1", f"{RUN_ID}=async"]})
    assert left == [], "the groups in flight at the end do not leave their sandboxes behind"
