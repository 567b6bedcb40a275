"""One node's part of a run started with plain ``sbatch`` (slurm/*.sbatch): the same bootstrap as
``launcher=slurm`` (Ray head on rank 0, workers join, trainer on the head, janitor on exit).

    srun python -m terminal_rl.launch.node hardware=h100_2x8 model=qwen3_32b

What submitit does for ``launcher=slurm`` is done here: the config is checked before anything
starts (every node, the same pure checks as on a login node), and Slurm's warning signal
(``#SBATCH --signal=USR2@<s>``) makes rank 0 save the trainer's current step and requeue the job.
The run id, unless set (``run.id=`` or ``$TERMINAL_RL_RUN_ID``), is the job name and a hash of the
command's overrides: a requeue keeps it, and submitting the same command again continues the run.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys

import submitit
from omegaconf import OmegaConf

from terminal_rl.config import compose
from terminal_rl.launch.slurm import SlurmRun


def run_id_for(job_name: str, overrides: list[str]) -> str:
    """The same command, the same run (pure)."""
    return f"{job_name}-{hashlib.sha256(chr(0).join(overrides).encode()).hexdigest()[:8]}"


def overrides_with_run_id(argv: list[str], environ: dict[str, str]) -> list[str]:
    if any(arg.startswith(("run.id=", "++run.id=")) for arg in argv) or environ.get("TERMINAL_RL_RUN_ID"):
        return argv
    return [*argv, f"run.id={run_id_for(environ.get('SLURM_JOB_NAME', 'terminal-rl'), argv)}"]


def requeue_on_signal(body: SlurmRun, rank: int, job_id: str) -> None:
    """On Slurm's warning signal, rank 0 has the trainer save its current step (``SlurmRun.checkpoint``)
    and requeues the job unless it used up its restarts; the other ranks carry on until the requeue
    stops them (the signal's default action would end them at once)."""

    def handler(signum, frame):
        if rank == 0 and body.checkpoint() is not None:
            subprocess.run(["scontrol", "requeue", job_id], check=True)

    signal.signal(submitit.JobEnvironment._usr_sig(), handler)


def main(argv: list[str]) -> int:
    # Until the handler is in place the warning is ignored: its default action would end the node.
    signal.signal(submitit.JobEnvironment._usr_sig(), signal.SIG_IGN)
    from terminal_rl.integrations.verl.config_check import verl_problems
    from terminal_rl.training.preflight import run_preflight

    # submitit's JobEnvironment reads Slurm's variables once told it runs under Slurm.
    os.environ.setdefault("SUBMITIT_EXECUTOR", "slurm")
    cfg = compose("train", [*overrides_with_run_id(argv, dict(os.environ)), "launcher=slurm"])
    problems = run_preflight(cfg, verl_problems, on_this_node=False)  # the node checks run in SlurmRun
    if problems:
        print(*(f"preflight: {problem}" for problem in problems), sep="\n", file=sys.stderr)
        return 1
    OmegaConf.resolve(cfg)
    env = submitit.JobEnvironment()
    body = SlurmRun(OmegaConf.to_container(cfg), restarts=int(os.environ.get("SLURM_RESTART_COUNT", "0")))
    requeue_on_signal(body, env.global_rank, str(env.job_id))
    if env.global_rank == 0:
        print(f"run {cfg.run.id}: submitting the same command again continues it", flush=True)
    print(body())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
