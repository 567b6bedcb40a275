"""One node's part of a training run started with plain ``sbatch`` (slurm/*.sbatch): the same
bootstrap as ``launcher=slurm`` does through submitit (``launch/node.py``).

    srun python -m terminal_rl.launch hardware=h100_2x8 model=qwen3_32b
"""

from __future__ import annotations

import os
import signal
import sys

import submitit

from terminal_rl.config import compose
from terminal_rl.launch.node import overrides_with_run_id, requeue_on_signal
from terminal_rl.launch.slurm import SlurmRun


def main(argv: list[str]) -> int:
    # Until the handler is in place the warning is ignored: its default action would end the node.
    signal.signal(submitit.JobEnvironment._usr_sig(), signal.SIG_IGN)
    from omegaconf import OmegaConf

    from terminal_rl.preflight import preflight
    from terminal_rl.preflight.job import train_job

    # submitit's JobEnvironment reads Slurm's variables once told it runs under Slurm.
    os.environ.setdefault("SUBMITIT_EXECUTOR", "slurm")
    # The run id comes from the command's own overrides (``overrides_with_run_id``), so this entry
    # composes them itself rather than through ``@hydra.main``.
    cfg = compose("train", [*overrides_with_run_id(argv, dict(os.environ)), "launcher=slurm"])
    if not preflight(cfg, on_this_node=False):  # the node checks run in SlurmRun, on every node
        return 1
    OmegaConf.resolve(cfg)
    env = submitit.JobEnvironment()
    body = SlurmRun(train_job(cfg), restarts=int(os.environ.get("SLURM_RESTART_COUNT", "0")))
    requeue_on_signal(body, env.global_rank, str(env.job_id))
    if env.global_rank == 0:
        print(f"run {cfg.run.id}: submitting the same command again continues it", flush=True)
    print(body())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
