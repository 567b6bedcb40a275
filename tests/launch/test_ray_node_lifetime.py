"""The node's `ray start` is told to shut down when the job task that started it dies, even by SIGKILL,
and survives Slurm's warning signal (sent to every process of the step) with its raylet and GCS."""

import os
import signal
import subprocess
import sys
import time

import pytest

from terminal_rl.config import PROJECT_ROOT
from terminal_rl.sandbox.lifecycle.owner import process_is_running

# A stand-in job task: starts a child the way ray_node starts `ray start`, prints its pid, and waits.
TASK = """
import subprocess, time
from terminal_rl.launch.slurm import _ray_preexec
child = subprocess.Popen(["sleep", "300"], start_new_session=True, preexec_fn=_ray_preexec())
print(child.pid, flush=True)
time.sleep(300)
"""


def test_child_gets_sigterm_when_the_task_is_sigkilled():
    task = subprocess.Popen([sys.executable, "-c", TASK], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)
    child = int(task.stdout.readline())
    assert os.getsid(child) == child, "the child runs in a session of its own, out of the task's process group"
    os.kill(task.pid, signal.SIGKILL)
    task.wait()
    deadline = time.monotonic() + 10
    while process_is_running(child):
        if time.monotonic() > deadline:
            os.kill(child, signal.SIGKILL)
            raise AssertionError("the child outlived its SIGKILLed parent")
        time.sleep(0.1)


@pytest.mark.ray
def test_a_ray_node_survives_slurms_warning_signal():
    """Slurm's --signal reaches every process of the step; SIGUSR2's default action would end the raylet,
    the GCS and `ray start` (it does, without the hook). Real Ray, started as ray_node starts it."""
    import shutil
    import tempfile
    from pathlib import Path

    from terminal_rl.launch.slurm import _ray_preexec

    ray = str(Path(sys.executable).with_name("ray"))
    tmp_path = Path(tempfile.mkdtemp(prefix="trl-ray-", dir="/tmp"))  # short: Ray's socket paths have a length limit
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    head = subprocess.Popen(
        [
            ray,
            "start",
            "--head",
            "--block",
            "--port=27379",
            "--node-ip-address=127.0.0.1",
            "--num-cpus=1",
            "--include-dashboard=false",
            f"--temp-dir={tmp_path}",
            "--ray-client-server-port=27500",
            "--min-worker-port=27510",
            "--max-worker-port=27599",
            "--disable-usage-stats",
        ],
        start_new_session=True,
        preexec_fn=_ray_preexec(),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def running() -> str:
            return subprocess.run(["pgrep", "-af", str(tmp_path)], capture_output=True, text=True).stdout

        deadline = time.monotonic() + 180
        while not ("raylet" in running() and "gcs_server" in running()):
            assert time.monotonic() < deadline and head.poll() is None, "the Ray head did not start"
            time.sleep(0.5)
        for pid in [head.pid, *(int(line.split()[0]) for line in running().splitlines())]:
            os.kill(pid, signal.SIGUSR2)
        time.sleep(3)
        assert head.poll() is None and "raylet" in running() and "gcs_server" in running(), "Ray survived the signal"
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        head.wait(60)
        shutil.rmtree(tmp_path, ignore_errors=True)
