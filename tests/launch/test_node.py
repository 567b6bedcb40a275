"""The plain-sbatch bootstrap (``python -m terminal_rl.launch``: terminal_rl/launch/__main__.py and
node.py): what submitit does for launcher=slurm, done in the job itself (config checks, the warning
signal's save and requeue, a stable run id)."""

import os
import signal
import subprocess
import time

import pytest
import submitit

from terminal_rl.config import PROJECT_ROOT, compose
from terminal_rl.launch import __main__ as entry
from terminal_rl.launch import node


def test_the_same_command_is_the_same_run_and_an_explicit_id_wins():
    argv = ["launcher=slurm", "hardware=h100_4x8", "model=qwen3_32b"]
    first = node.node_run_id(argv, {"SLURM_JOB_NAME": "anneal"})
    again = node.node_run_id(argv, {"SLURM_JOB_NAME": "anneal", "SLURM_JOB_ID": "999"})
    assert first == again and first.startswith("anneal-"), "a resubmission finds its run again"
    assert first == node.run_id_for("anneal", argv[1:]), "the sbatch scripts' launcher=slurm is not the command's"
    assert node.node_run_id([*argv, "seed=2"], {"SLURM_JOB_NAME": "anneal"}) != first
    assert node.node_run_id([*argv, "run.id=mine"], {}) is None
    assert node.node_run_id(argv, {"TERMINAL_RL_RUN_ID": "env-id"}) is None


def test_a_bad_config_stops_every_node_before_anything_starts(capsys, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_NAME", "bad")
    warning = submitit.JobEnvironment._usr_sig()
    previous = signal.getsignal(warning)
    overrides = ["launcher=slurm", "hardware=cpu", "model=tiny", "actor_rollout_ref.actor.ppo_mini_batch_size=5"]
    try:
        assert entry.run_node(compose("train", overrides), overrides, {"SLURM_JOB_NAME": "bad"}) == 1
        assert signal.getsignal(warning) == signal.SIG_IGN, "the warning cannot end a node still starting"
    finally:
        signal.signal(warning, previous)
    assert "preflight: actor.ppo_mini_batch_size (5) must divide data.train_batch_size" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="add launcher=slurm"):
        entry.run_node(compose("train", ["hardware=cpu", "model=tiny"]), [], {})


class _Body:
    """Stands in for SlurmRun: its checkpoint saved (or not) and returned what submitit would."""

    def __init__(self, requeue: bool):
        self.requeue, self.asked = requeue, 0

    def checkpoint(self):
        self.asked += 1
        return object() if self.requeue else None


@pytest.mark.parametrize(
    ("rank", "requeue", "expected"), [(0, True, [["scontrol", "requeue", "42"]]), (0, False, []), (1, True, [])]
)
def test_slurms_warning_signal_saves_then_requeues_on_rank_0_only(monkeypatch, rank, requeue, expected):
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda command, check: calls.append(command))
    body = _Body(requeue)
    warning = submitit.JobEnvironment._usr_sig()
    previous = signal.getsignal(warning)
    try:
        node.requeue_on_signal(body, rank, "42")
        os.kill(os.getpid(), warning)  # without the handler, its default action ends this process
        time.sleep(0.05)
    finally:
        signal.signal(warning, previous)
    assert calls == expected and body.asked == (rank == 0)


@pytest.mark.parametrize("script", ["train_1node.sbatch", "train_multinode.sbatch"])
def test_the_sbatch_scripts_ask_for_the_warning_signal_and_a_requeue(script):
    """The signal comes as early as the save waits for it (launcher.signal_delay_s)."""
    delay = int(compose("train", ["launcher=slurm"]).launcher.signal_delay_s)
    text = (PROJECT_ROOT / "slurm" / script).read_text()
    assert f"#SBATCH --signal=USR2@{delay}\n" in text and "#SBATCH --requeue\n" in text
