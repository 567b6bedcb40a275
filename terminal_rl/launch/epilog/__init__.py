"""What the Slurm epilog does on a node once job N has ended there: end the job's processes that
outlived it, then remove its sandbox containers.

Both can survive a job. ``scancel`` can make srun SIGKILL a task before its own clean-up runs; with
``ProctrackType=proctrack/linuxproc`` Slurm then loses every process that left the task's process
tree (the node's Ray runs in a session of its own), and a rootful Docker daemon keeps containers
outside the job's cgroup with any proctrack plugin. Our job bodies mark their process tree with
``TERMINAL_RL_SLURM_JOB=N`` and every sandbox carries the job's id as a label, so the epilog touches
only what this job started.

    python -m terminal_rl.launch.epilog [job_id=N] [overrides]   (conf/epilog.yaml)

``slurm/epilog.sh`` calls it with Slurm's ``SLURM_JOB_ID``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from terminal_rl.sandbox.lifecycle.owner import process_is_running

JOB_MARKER = "TERMINAL_RL_SLURM_JOB"


def mark_job_processes() -> None:
    """Mark this process and everything it starts as the current Slurm job's (for the epilog)."""
    if job_id := os.environ.get("SLURM_JOB_ID"):
        os.environ[JOB_MARKER] = job_id


def job_processes(job_id: str, proc: Path = Path("/proc")) -> list[int]:
    """Live processes on this host whose environment marks them as ``job_id``'s."""
    marker = f"{JOB_MARKER}={job_id}".encode()
    pids = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0") and process_is_running(int(entry.name), proc):
                pids.append(int(entry.name))
        except OSError:  # exited meanwhile, or not ours to read
            continue
    return pids


def end_processes(pids: list[int], grace_sec: float = 10.0) -> list[int]:
    """SIGTERM ``pids``, then SIGKILL whichever still live after ``grace_sec``; returns those killed."""
    _send(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace_sec
    while (left := [p for p in pids if process_is_running(p)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    _send(left, signal.SIGKILL)
    return left


def _send(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
