"""What the Slurm epilog does on a node once job N has ended there: end the job's processes that
outlived it, then remove its sandbox containers.

Both can survive a job. ``scancel`` can make srun SIGKILL a task before its own clean-up runs; with
``ProctrackType=proctrack/linuxproc`` Slurm then loses every process that left the task's process
tree (the node's Ray runs in a session of its own), and a rootful Docker daemon keeps containers
outside the job's cgroup with any proctrack plugin. Our job bodies mark their process tree with
``TERMINAL_RL_SLURM_JOB=N`` and every sandbox carries the job's id as a label, so the epilog touches
only what this job started.

    python -m terminal_rl.launch.epilog [JOB_ID] [hydra overrides of conf/services.yaml]

``slurm/epilog.sh`` calls it with Slurm's ``SLURM_JOB_ID``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
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


def main(argv: list[str] | None = None) -> int:
    from terminal_rl.config import compose
    from terminal_rl.sandbox.config import SandboxConfig
    from terminal_rl.sandbox.lifecycle.janitor import sweep_until_settled
    from terminal_rl.sandbox.runtime.docker_client import docker_client

    parser = argparse.ArgumentParser(
        prog="python -m terminal_rl.launch.epilog",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "job_id",
        nargs="?",
        default=os.environ.get("SLURM_JOB_ID"),
        help="the ended job (default: SLURM_JOB_ID, as Slurm sets it for the epilog)",
    )
    parser.add_argument("--grace-sec", type=float, default=10.0, help="between SIGTERM and SIGKILL")
    args, overrides = parser.parse_known_args(argv)
    if not args.job_id or not args.job_id.isdigit():
        parser.error(f"needs the ended job's numeric id (argument or SLURM_JOB_ID), got {args.job_id!r}")
    survivors = job_processes(args.job_id)
    killed = end_processes(survivors, args.grace_sec)
    client = docker_client(SandboxConfig.from_node(compose("services", overrides).sandbox).docker_host)
    removed = sweep_until_settled(client, slurm_job=args.job_id)
    print(
        f"epilog for job {args.job_id}: ended {len(survivors)} leftover processes ({len(killed)} needed "
        f"SIGKILL), removed {removed} sandbox containers"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
