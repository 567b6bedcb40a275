"""One node's part of a run started with plain ``sbatch`` (slurm/*.sbatch, ``python -m
terminal_rl.launch``, ``launch/__main__.py``): the same bootstrap as ``launcher=slurm`` (Ray head on
rank 0, workers join, trainer on the head, janitor on exit).

What submitit does for ``launcher=slurm`` is done here: the config is checked before anything
starts (every node, the same pure checks as on a login node), and Slurm's warning signal
(``#SBATCH --signal=USR2@<s>``) makes rank 0 save the trainer's current step and requeue the job.
The run id, unless set (``run.id=`` or ``$TERMINAL_RL_RUN_ID``), is the job name and a hash of the
command's overrides: a requeue keeps it, and submitting the same command again continues the run.
"""

from __future__ import annotations

import hashlib
import signal
import subprocess

import submitit

from terminal_rl.launch.slurm import SlurmRun


def run_id_for(job_name: str, overrides: list[str]) -> str:
    """The same command, the same run (pure)."""
    return f"{job_name}-{hashlib.sha256(chr(0).join(overrides).encode()).hexdigest()[:8]}"


def node_run_id(overrides: list[str], environ: dict[str, str]) -> str | None:
    """The run id a plain-sbatch node gives its run (pure): None when the command sets one (``run.id=``
    or ``$TERMINAL_RL_RUN_ID``), else the job name and a hash of the command's own overrides (the
    ``launcher=slurm`` the sbatch scripts add left out)."""
    if any(o.startswith(("run.id=", "++run.id=")) for o in overrides) or environ.get("TERMINAL_RL_RUN_ID"):
        return None
    own = [o for o in overrides if o != "launcher=slurm"]
    return run_id_for(environ.get("SLURM_JOB_NAME", "terminal-rl"), own)


def requeue_on_signal(body: SlurmRun, rank: int, job_id: str) -> None:
    """On Slurm's warning signal, rank 0 has the trainer save its current step (``SlurmRun.checkpoint``)
    and requeues the job unless it used up its restarts; the other ranks carry on until the requeue
    stops them (the signal's default action would end them at once)."""

    def handler(signum, frame):
        if rank == 0 and body.checkpoint() is not None:
            subprocess.run(["scontrol", "requeue", job_id], check=True)

    signal.signal(submitit.JobEnvironment._usr_sig(), handler)
