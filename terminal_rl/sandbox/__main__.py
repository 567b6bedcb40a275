"""Sandbox CLI.

    python -m terminal_rl.sandbox images bootstrap [task_set=...] [hydra overrides]
        provide every base image the task set's Dockerfiles build FROM (offline, by recipe), report
        the ones no recipe covers with their fix, then build the verifier's trusted toolchain
    python -m terminal_rl.sandbox images build [--only ID ...] [--jobs N] [--report FILE] [--discard] [hydra overrides]
        build the task set's images and write a report of what failed and why; with
        sandbox.build.archive_dir set, save them there too (nodes then load instead of building)
    python -m terminal_rl.sandbox janitor [--this-run] [--networks] [hydra overrides]
        remove our containers whose owner process is gone or that outlived sandbox.janitor.ttl_sec

Overrides compose ``conf/services.yaml``, e.g. ``sandbox.docker_host=unix:///run/podman/podman.sock``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from terminal_rl.config import compose, project_path
from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.images.base_images import BaseImageError
from terminal_rl.sandbox.images.build_report import build_on_this_engine
from terminal_rl.sandbox.images.distribution import publish
from terminal_rl.sandbox.images.node_images import provide_node_images
from terminal_rl.sandbox.lifecycle.janitor import sweep
from terminal_rl.sandbox.lifecycle.owner import Owner
from terminal_rl.sandbox.runtime.docker_client import docker_client
from terminal_rl.sandbox.verify.toolchain import ToolchainError
from terminal_rl.tasks.dockerfile import task_set_images
from terminal_rl.tasks.task_set import load_valid_tasks, task_set_config

console = Console()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m terminal_rl.sandbox", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    groups = parser.add_subparsers(dest="group", required=True)
    images = groups.add_parser("images", help="task and base images").add_subparsers(dest="action", required=True)
    images.add_parser("bootstrap", help="provide the task set's base images and the verifier's toolchain")
    build = images.add_parser("build", help="build the task set's images and report failures")
    build.add_argument("--only", nargs="*", default=[], help="task ids (default: all valid tasks)")
    build.add_argument("--jobs", type=int, default=1, help="builds at once")
    build.add_argument("--report", type=Path, help="JSON report path (default: <shared dir>/image_builds.json)")
    build.add_argument("--discard", action="store_true", help="remove each image once built (measure, keep disk)")
    janitor = groups.add_parser("janitor", help="remove orphaned sandbox containers")
    janitor.add_argument("--this-run", action="store_true", help="only containers of run.id")
    janitor.add_argument("--networks", action="store_true", help="also remove our networks nothing uses")
    args, overrides = parser.parse_known_args(argv)
    cfg = compose("services", overrides)
    sandbox = SandboxConfig.from_node(cfg.sandbox)
    run = RunContext.from_config(cfg.run)
    client = docker_client(sandbox.docker_host)
    if args.group == "janitor":
        report = sweep(
            client,
            Owner.current(),
            sandbox.janitor.ttl_sec,
            run_id=run.run_id if args.this_run else None,
            networks=args.networks,
        )
        console.print(
            f"janitor: removed {len(report.removed_containers)} containers, "
            f"{len(report.removed_networks)} networks; kept {report.kept} with a live owner"
        )
        return 0
    if args.group == "images" and args.action == "build":
        return build_images(args, cfg, sandbox, run)
    return bootstrap(cfg, sandbox, run, client)


def bootstrap(cfg, sandbox: SandboxConfig, run: RunContext, client) -> int:
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


def build_images(args, cfg, sandbox: SandboxConfig, run: RunContext) -> int:
    tasks = [t for t in load_valid_tasks(task_set_config(cfg.task_set)) if not args.only or t.id in args.only]
    report_path = args.report or run.image_report

    def progress(outcome) -> None:
        status = "cached" if outcome.cached else ("built" if outcome.ok else f"FAILED ({outcome.category})")
        console.print(f"{outcome.task_id}: {status} in {outcome.duration_sec:.0f}s")

    outcomes = build_on_this_engine(sandbox, run.image_lock_dir, tasks, report_path, args.jobs, progress, args.discard)
    failed = sum(not o.ok for o in outcomes)
    console.print(f"{len(outcomes) - failed}/{len(outcomes)} task images built; report: {report_path}")
    if sandbox.build.archive_dir and not args.discard:  # for nodes that load instead of building
        archive = project_path(sandbox.build.archive_dir)
        saved = publish(
            docker_client(sandbox.docker_host), {o.task_id: o.image for o in outcomes if o.ok}, archive, run.run_id
        )
        console.print(f"archived {len(saved)} new images in {archive}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
