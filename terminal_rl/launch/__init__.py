"""Launchers: where a training run executes (``launcher=local`` in this process; Slurm later)."""

from __future__ import annotations

from omegaconf import DictConfig


def launch(cfg: DictConfig) -> None:
    if cfg.launcher.kind == "local":
        from terminal_rl.integrations.verl.driver import train

        train(cfg)
        return
    raise ValueError(f"launcher.kind={cfg.launcher.kind!r} is not one of: local")
