"""What every node of a Slurm run does before step 1, since rollout workers run on all of them: the
node checks (container engine, base images, disk, egress network) and, with
``sandbox.build.archive_dir`` set, the task images: rank 0 builds the task set's images and archives
them, every other node loads them from the archive (see ``terminal_rl/sandbox/distribution.py``).
"""

from __future__ import annotations

import asyncio
import socket

from omegaconf import DictConfig

from terminal_rl.config import project_path
from terminal_rl.run_context import RunContext


def prepare_node(cfg: DictConfig, rank: int, image_timeout_sec: float) -> None:
    """Raise with every problem this node has; on success the node can run sandboxes."""
    from terminal_rl.training.preflight import node_problems

    problems = node_problems(cfg)
    if not problems:
        problems = _images(cfg, rank, image_timeout_sec)
    if problems:
        raise RuntimeError(f"node {socket.gethostname()} (rank {rank}) failed preflight: {problems}")


def _images(cfg: DictConfig, rank: int, timeout_sec: float) -> list[str]:
    from terminal_rl.sandbox.config import SandboxConfig
    from terminal_rl.sandbox.distribution import fetch, present, publish, wait_for_manifest
    from terminal_rl.sandbox.docker_client import docker_client

    sandbox = SandboxConfig.from_node(cfg.sandbox)
    if not sandbox.build.archive_dir:
        return []
    archive = project_path(sandbox.build.archive_dir)
    run = RunContext.from_config(cfg.run)
    client = docker_client(sandbox.docker_host)
    if rank == 0:
        images = build_task_images(cfg, sandbox, run)
        saved = publish(client, images, archive, run.run_id)
        print(f"task images: {len(images)} built, {len(saved)} newly archived in {archive}", flush=True)
    else:
        images = wait_for_manifest(archive, run.run_id, timeout_sec)
        loaded = fetch(client, images, archive)
        print(f"task images: loaded {len(loaded)} of {len(images)} from {archive}", flush=True)
    missing = sorted(set(images.values()) - set(present(client, images.values())))
    return [f"task images missing after distribution: {missing}"] if missing else []


def build_task_images(cfg: DictConfig, sandbox, run: RunContext) -> dict[str, str]:
    """Build (or find) every valid task's image; task id -> tag for those that built. Failures are in
    ``<run>/image_builds.json``; their rollouts fail as sandbox errors and are masked."""
    from terminal_rl.sandbox.build_report import build_all
    from terminal_rl.sandbox.docker_client import AsyncDocker, docker_client
    from terminal_rl.sandbox.images import TaskImages
    from terminal_rl.tasks.task_set import load_task_set, task_set_config
    from terminal_rl.tasks.validation import validate_tasks

    loaded = load_task_set(task_set_config(cfg.task_set))
    tasks = validate_tasks(loaded.tasks, loaded.problems).valid
    docker = AsyncDocker(docker_client(sandbox.docker_host), sandbox.docker_threads)
    images = TaskImages(docker, sandbox.build, run.image_cache_dir / "locks")
    outcomes = asyncio.run(build_all(images, tasks, run.image_report, jobs=sandbox.build.jobs))
    return {o.task_id: o.image for o in outcomes if o.ok}
