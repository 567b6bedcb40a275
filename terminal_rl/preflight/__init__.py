"""The door of a training run: the composed config checked whole (``checks.py``), then turned into
the typed ``TrainJob`` the parts below take (``job.py``). ``python -m terminal_rl.preflight`` runs
the checks alone."""

from __future__ import annotations

import sys
from collections.abc import Callable

from omegaconf import DictConfig

from terminal_rl.preflight.checks import CONFIG_CHECKS, check_support, notes
from terminal_rl.preflight.job import train_job
from terminal_rl.training.job import TrainJob
from terminal_rl.training.node_checks import NODE_CHECKS, SHARED_CHECKS


def apply_run_environment(cfg: DictConfig) -> None:
    """The run's process environment, set before verl is imported (it fixes the platform then)."""
    from terminal_rl.integrations.verl.driver import apply_environment, run_environment
    from terminal_rl.run_context import RunContext

    apply_environment(run_environment(RunContext.from_config(cfg.run), cfg.logger.wandb_mode, cfg.hardware.env))


def preflight(cfg: DictConfig, on_this_node: bool | None = None, notes_too: bool = True) -> TrainJob | None:
    """The run's ``TrainJob`` once every check passed, else None; the problems are printed (stderr),
    or ``ok`` and the run's notes (``notes_too``). The node checks run here for ``launcher=local``;
    under Slurm they run in the job, on every node."""
    from terminal_rl.integrations.verl.config_check import verl_problems

    local = cfg.launcher.kind == "local" if on_this_node is None else on_this_node
    problems, job = checked(cfg, verl_problems, on_this_node=local)
    for problem in problems:
        print(f"preflight: {problem}", file=sys.stderr)
    if problems:
        return None
    if notes_too:
        print(f"preflight: ok ({cfg.model.name} on {cfg.hardware.name})")
        for note in notes(cfg):
            print(f"preflight: {note}")
    return job


def run_preflight(
    cfg: DictConfig,
    verl_check: Callable[[DictConfig], list[str]] | None = None,
    skip: tuple[str, ...] = (),
    on_this_node: bool = True,
) -> list[str]:
    """All problems of the composed config; empty means go."""
    return checked(cfg, verl_check, skip, on_this_node)[0]


def checked(
    cfg: DictConfig,
    verl_check: Callable[[DictConfig], list[str]] | None = None,
    skip: tuple[str, ...] = (),
    on_this_node: bool = True,
) -> tuple[list[str], TrainJob | None]:
    """The composed config's problems, and its ``TrainJob`` when it could be made. Support is checked
    first: an unsupported pair has no values to check the rest with. ``on_this_node=False`` leaves the
    node checks to the nodes the run will use (a login node need not run Docker)."""
    problems = check_support(cfg)
    if problems:
        return problems, None
    for check in CONFIG_CHECKS:
        if check.__name__ not in skip:
            problems.extend(check(cfg))
    try:
        job = train_job(cfg)
    except (ValueError, TypeError) as error:  # a section that does not fit its type
        return [*problems, str(error)], None
    for node_check in NODE_CHECKS if on_this_node else SHARED_CHECKS:
        if node_check.__name__ not in skip:
            problems.extend(node_check(job))
    if verl_check is not None and not problems:
        problems.extend(verl_check(job.verl))
    return problems, job
