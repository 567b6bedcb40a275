"""launcher=slurm against a real Slurm (slurmctld + two slurmd on this machine, started by
scripts/start_slurm.sh): a CPU training job, a --multirun sweep (one job per point), scancel with
sandboxes up, a two-node Ray bootstrap, and a requeue that resumes from the checkpoint."""

import os
import re
import subprocess
import sys
import time

import pytest

from terminal_rl.config import PROJECT_ROOT
from terminal_rl.sandbox.docker_client import docker_client
from terminal_rl.sandbox.owner import MANAGED, RUN_ID

pytestmark = [pytest.mark.slurm, pytest.mark.docker]

CPU_RUN = ["hardware=cpu", "model=tiny", "task_set=tbrl_smoke", "logger=console", "launcher=slurm"]


def train(*overrides, multirun=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VERL_", "TERMINAL_RL_RUN"))}
    command = [sys.executable, "-m", "terminal_rl.train", *(["--multirun"] if multirun else []), *overrides]
    result = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return [int(j) for j in re.findall(r"submitted Slurm job (\d+)", result.stdout)], result.stdout


def state(job: int) -> str:
    out = subprocess.run(["sacct", "-j", str(job), "-X", "-n", "-o", "State"], capture_output=True, text=True).stdout
    if out.strip():
        return out.split()[0]
    queue = subprocess.run(["squeue", "-h", "-j", str(job), "-o", "%T"], capture_output=True, text=True).stdout.strip()
    return queue or "UNKNOWN"


def wait(job: int, timeout: float = 900, until=("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL")) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        current = state(job)
        if current.startswith(until) or (current == "UNKNOWN" and not subprocess.run(
                ["squeue", "-h", "-j", str(job)], capture_output=True, text=True).stdout.strip()):
            return current
        time.sleep(3)
    subprocess.run(["scancel", str(job)])
    raise AssertionError(f"job {job} did not finish in {timeout}s (state {state(job)})")


def finished(log_dir, job: int) -> str:
    """submitit's own record of how the job body ended, from its log."""
    return (log_dir / "slurm" / f"{job}_0_log.out").read_text()


@pytest.fixture(scope="module", autouse=True)
def slurm_up():
    subprocess.run(["bash", str(PROJECT_ROOT / "scripts" / "start_slurm.sh")], check=True, capture_output=True)


def test_cpu_training_job_runs_through_launcher_slurm(tmp_path):
    [job], stdout = train(*CPU_RUN, "trainer.total_training_steps=1", "run.id=sl-train", f"run.output_root={tmp_path}")
    log = tmp_path / "sl-train" / "logs" / "slurm" / f"{job}_0_log.out"
    assert str(log) in stdout, "the CLI says where the logs go"
    wait(job)
    text = log.read_text()
    assert "Job completed successfully" in text and "step:1 -" in text
    assert (tmp_path / "sl-train" / "checkpoints").is_dir() or "step:1 -" in text


def test_multirun_sweep_submits_one_job_per_point(tmp_path):
    jobs, _ = train(*CPU_RUN, "launcher.preflight_only=true", "reward_mix=tests_only,format5_exec10_tests85",
                    "run.id=sweep-${hydra:job.num}", f"run.output_root={tmp_path}", multirun=True)
    assert len(jobs) == 2 and len(set(jobs)) == 2
    for number, job in enumerate(jobs):
        wait(job, timeout=300)
        assert "Job completed successfully" in finished(tmp_path / f"sweep-{number}" / "logs", job)


def test_scancel_leaves_no_sandbox_behind(tmp_path):
    [job], _ = train(*CPU_RUN, "trainer.total_training_steps=5", "run.id=sl-cancel", f"run.output_root={tmp_path}")
    client = docker_client()
    ours = {"label": [f"{MANAGED}=1", f"{RUN_ID}=sl-cancel"]}
    deadline = time.monotonic() + 600
    while not client.containers.list(all=True, filters=ours):
        assert time.monotonic() < deadline and state(job) in ("PENDING", "RUNNING", "UNKNOWN"), state(job)
        time.sleep(1)
    subprocess.run(["scancel", str(job)], check=True)
    wait(job, timeout=120)
    time.sleep(5)
    assert client.containers.list(all=True, filters=ours) == [], "the job's janitor removed its containers"


def test_requeued_job_resumes_from_its_checkpoint(tmp_path):
    [job], _ = train(*CPU_RUN, "trainer.total_training_steps=2", "trainer.save_freq=1", "run.id=sl-requeue",
                     f"run.output_root={tmp_path}")
    marker = tmp_path / "sl-requeue" / "checkpoints" / "global_step_1"
    deadline = time.monotonic() + 600
    while not marker.is_dir():
        assert time.monotonic() < deadline, state(job)
        time.sleep(2)
    time.sleep(5)
    subprocess.run(["scontrol", "requeue", str(job)], check=True)
    time.sleep(2)  # Slurm holds a requeued job back a while (BeginTime); release it now
    subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], capture_output=True)
    wait(job, timeout=900)
    text = finished(tmp_path / "sl-requeue" / "logs", job)
    assert "Job completed successfully" in text
    assert "global_step_1" in text and "step:2 -" in text, "the requeued job resumed and finished step 2"
