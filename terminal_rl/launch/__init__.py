"""Launchers: where a training run executes. ``launcher=local`` runs in this process;
``launcher=slurm`` submits it with submitit (see ``slurm.py``). With ``--multirun`` Hydra's basic
launcher visits each sweep point in turn and each point submits its own Slurm job and returns, so a
sweep becomes one job per point without a Hydra launcher plugin.
"""

from __future__ import annotations

from omegaconf import OmegaConf

from terminal_rl.training.job import TrainJob


def launch(job: TrainJob) -> None:
    if job.launcher.kind == "local":
        from terminal_rl.integrations.verl.driver import train

        train(job)
    elif job.launcher.kind == "slurm":
        from terminal_rl.launch.slurm import SlurmRun, submit

        OmegaConf.resolve(job.verl)  # here: one run id, one config for every node and every attempt
        submit(job.run, job.hardware, job.launcher, SlurmRun(job, restarts=0))
    else:
        raise ValueError(f"launcher.kind={job.launcher.kind!r} is not one of: local, slurm")
