"""Launchers: where a training run executes. ``launcher=local`` runs in this process;
``launcher=slurm`` submits it with submitit (see ``slurm.py``). With ``--multirun`` Hydra's basic
launcher visits each sweep point in turn and each point submits its own Slurm job and returns, so a
sweep becomes one job per point without a Hydra launcher plugin.
"""

from __future__ import annotations

from omegaconf import DictConfig


def launch(cfg: DictConfig) -> None:
    if cfg.launcher.kind == "local":
        from terminal_rl.integrations.verl.driver import train

        train(cfg)
    elif cfg.launcher.kind == "slurm":
        from terminal_rl.launch.slurm import submit

        submit(cfg)
    else:
        raise ValueError(f"launcher.kind={cfg.launcher.kind!r} is not one of: local, slurm")
