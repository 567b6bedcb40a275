"""The Slurm epilog ends what a job left running and removes its sandboxes, and nothing of other jobs."""

import dataclasses
import os
import subprocess
import sys

import pytest
from docker.types import Ulimit

from terminal_rl.config import PROJECT_ROOT
from terminal_rl.launch.epilog import JOB_MARKER, job_processes
from terminal_rl.sandbox.lifecycle.owner import RUN_ID, Owner
from terminal_rl.sandbox.runtime.docker_client import docker_client
from tests.support import BASE_IMAGE

# A process that ignores SIGTERM, as a wedged Ray worker might.
STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(300)"
)


def epilog(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SLURM_JOB_ID"}
    return subprocess.run(
        [sys.executable, "-m", "terminal_rl.launch.epilog", *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_job_processes_reads_the_marker_from_each_environment(tmp_path):
    for pid, environ, state in (
        (11, f"A=1\0{JOB_MARKER}=7\0", "S"),
        (12, f"{JOB_MARKER}=77\0", "S"),
        (13, f"{JOB_MARKER}=7\0", "Z"),
        (14, "", "R"),
    ):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "environ").write_text(environ)
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (python) {state} 1 1")
    (tmp_path / "self").mkdir()
    assert job_processes("7", proc=tmp_path) == [11], "a prefix of another job's id or a zombie is not the job's"


def test_epilog_needs_a_job_id():
    result = epilog()
    assert result.returncode == 1 and "SLURM_JOB_ID" in result.stderr


@pytest.mark.docker
@pytest.mark.both_engines
def test_epilog_ends_the_jobs_processes_and_removes_its_containers(sandbox_config):
    client = docker_client(sandbox_config.docker_host)
    run_id = f"epilog-{os.getpid()}"
    # This test process owns both containers and stays alive: the owner-gone rule alone would keep them.
    labels = {job: dataclasses.replace(Owner.current(), slurm_job=job).labels(run_id, job) for job in ("4242", "4243")}
    # Podman refuses containers whose default limits exceed its own; set them explicitly.
    limits = [Ulimit(name=name, soft=16384, hard=16384) for name in ("nofile", "nproc")]
    containers = {
        job: client.containers.run(BASE_IMAGE, ["sleep", "300"], detach=True, labels=labels[job], ulimits=limits)
        for job in labels
    }
    processes = {
        job: subprocess.Popen(
            [sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, text=True, env={**os.environ, JOB_MARKER: job}
        )
        for job in labels
    }
    try:
        assert all(p.stdout.readline().strip() == "up" for p in processes.values())
        result = epilog("job_id=4242", "grace_sec=1", f"sandbox.docker_host={sandbox_config.docker_host}")
        assert result.returncode == 0, result.stderr
        assert "ended 1 leftover processes (1 needed SIGKILL), removed 1 sandbox containers" in result.stdout
        assert processes["4242"].wait(timeout=10) == -9
        assert processes["4243"].poll() is None, "another job's process is left alone"
        remaining = client.containers.list(all=True, filters={"label": f"{RUN_ID}={run_id}"})
        assert [c.id for c in remaining] == [containers["4243"].id], "only job 4242's container was removed"
    finally:
        for process in processes.values():
            process.kill()
        for container in client.containers.list(all=True, filters={"label": f"{RUN_ID}={run_id}"}):
            container.remove(force=True)
