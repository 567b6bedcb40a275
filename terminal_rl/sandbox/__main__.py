"""Sandbox CLI (Hydra app on ``conf/services.yaml``).

    python -m terminal_rl.sandbox command=bootstrap [task_set=...] [overrides]
        provide every base image the task set's Dockerfiles build FROM (offline, by recipe), report
        the ones no recipe covers with their fix, then build the verifier's trusted toolchain
    python -m terminal_rl.sandbox command=build [only=[ID,...]] [jobs=N] [report=FILE] [discard=true]
        build the task set's images and write a report of what failed and why; with
        sandbox.build.archive_dir set, save them there too (nodes then load instead of building)
    python -m terminal_rl.sandbox command=janitor [this_run=true] [networks=true]
        remove our containers whose owner process is gone or that outlived sandbox.janitor.ttl_sec

Overrides compose ``conf/services.yaml``, e.g. ``sandbox.docker_host=unix:///run/podman/podman.sock``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig
from rich.console import Console

from terminal_rl.config import chosen_command, project_path
from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.images.base_images import BaseImageError
from terminal_rl.sandbox.images.build_report import build_on_this_engine, outcome_line
from terminal_rl.sandbox.images.distribution import publish
from terminal_rl.sandbox.images.node_images import provide_node_images
from terminal_rl.sandbox.lifecycle.janitor import sweep
from terminal_rl.sandbox.lifecycle.owner import Owner
from terminal_rl.sandbox.runtime.docker_client import docker_client
from terminal_rl.sandbox.verify.toolchain import ToolchainError
from terminal_rl.tasks.dockerfile import task_set_images
from terminal_rl.tasks.task_set import load_valid_tasks, task_set_config

console = Console()


COMMANDS = ("bootstrap", "build", "janitor")


@hydra.main(config_path="../../conf", config_name="services", version_base="1.3")
def main(cfg: DictConfig) -> None:
    command = chosen_command(cfg.command, COMMANDS)
    sandbox = SandboxConfig.from_node(cfg.sandbox)
    run = RunContext.from_config(cfg.run)
    client = docker_client(sandbox.docker_host)
    if command == "janitor":
        report = sweep(
            client,
            Owner.current(),
            sandbox.janitor.ttl_sec,
            run_id=run.run_id if cfg.this_run else None,
            networks=cfg.networks,
        )
        console.print(
            f"janitor: removed {len(report.removed_containers)} containers, "
            f"{len(report.removed_networks)} networks; kept {report.kept} with a live owner"
        )
        sys.exit(0)
    sys.exit(build_images(cfg, sandbox, run) if command == "build" else bootstrap(cfg, sandbox, run, client))


def bootstrap(cfg: DictConfig, sandbox: SandboxConfig, run: RunContext, client) -> int:
    references = task_set_images(load_valid_tasks(task_set_config(cfg.task_set)))
    try:
        with console.status("providing base images (debootstrap + recipes) and the verifier's toolchain"):
            provided = provide_node_images(client, sandbox, references, run)
    except (BaseImageError, ToolchainError) as error:
        console.print(f"[red]error:[/red] {error}")
        return 1
    console.print(
        f"base images: {len(references)} named by the task set, {len(provided.provided)} provided now"
        + (f" ({', '.join(provided.provided)})" if provided.provided else "")
    )
    for fix in provided.unmatched.values():
        console.print(f"[yellow]missing:[/yellow] {fix}")
    console.print(f"verifier toolchain: {provided.toolchain.directory}")
    return 0


def build_images(cfg: DictConfig, sandbox: SandboxConfig, run: RunContext) -> int:
    tasks = [t for t in load_valid_tasks(task_set_config(cfg.task_set)) if not cfg.only or t.id in cfg.only]
    report_path = Path(cfg.report) if cfg.report else run.image_report

    def progress(outcome) -> None:
        console.print(outcome_line(outcome))

    outcomes = build_on_this_engine(sandbox, run.image_lock_dir, tasks, report_path, cfg.jobs, progress, cfg.discard)
    failed = sum(not o.ok for o in outcomes)
    console.print(f"{len(outcomes) - failed}/{len(outcomes)} task images built; report: {report_path}")
    if sandbox.build.archive_dir and not cfg.discard:  # for nodes that load instead of building
        archive = project_path(sandbox.build.archive_dir)
        saved = publish(
            docker_client(sandbox.docker_host), {o.task_id: o.image for o in outcomes if o.ok}, archive, run.run_id
        )
        console.print(f"archived {len(saved)} new images in {archive}")
    return 0


if __name__ == "__main__":
    main()
