"""The node's `ray start` is told to shut down when the job task that started it dies, even by SIGKILL."""

import os
import signal
import subprocess
import sys
import time

from terminal_rl.config import PROJECT_ROOT
from terminal_rl.sandbox.owner import process_is_running

# A stand-in job task: starts a child the way ray_node starts `ray start`, prints its pid, and waits.
TASK = """
import subprocess, time
from terminal_rl.launch.slurm import _stop_when_parent_dies
child = subprocess.Popen(["sleep", "300"], start_new_session=True, preexec_fn=_stop_when_parent_dies())
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
