"""What every node of a Slurm run does before step 1, since rollout workers run on all of them, each
on its own container engine:

1. the engine's base images and the verifier's toolchain (``sandbox/images/node_images.py``), then the node
   checks (engine, disk, mounts, egress network, weights offline);
2. with ``sandbox.build.archive_dir`` set, every task image: rank 0 builds and archives them, the
   others load the archive (``sandbox/images/distribution.py``);
3. once the head has built the images the run needs first (validation rows, first draws), the same
   ones on this node's engine, so no step-1 rollout waits for a build (``build_task_images``).
"""

from __future__ import annotations

import socket
from pathlib import Path

from terminal_rl.config import project_path
from terminal_rl.tasks.task_set import load_valid_tasks
from terminal_rl.training.job import TrainJob


def prepare_node(job: TrainJob, rank: int, image_timeout_sec: float) -> None:
    """Raise with every problem this node has; on success the node can run sandboxes."""
    from terminal_rl.training.node_checks import node_problems

    problems = _node_images(job) or node_problems(job)
    if not problems:
        problems = _archived_images(job, rank, image_timeout_sec)
    if problems:
        raise RuntimeError(f"node {socket.gethostname()} (rank {rank}) failed preflight: {problems}")


def _node_images(job: TrainJob) -> list[str]:
    from docker.errors import DockerException

    from terminal_rl.sandbox.images.base_images import BaseImageError
    from terminal_rl.sandbox.images.node_images import provide_node_images
    from terminal_rl.sandbox.runtime.docker_client import docker_client
    from terminal_rl.sandbox.verify.toolchain import ToolchainError
    from terminal_rl.tasks.dockerfile import task_set_images

    sandbox = job.sandbox
    print(f"node images on {socket.gethostname()}: providing base images and the verifier toolchain", flush=True)
    try:
        client = docker_client(sandbox.docker_host)
        provided = provide_node_images(client, sandbox, task_set_images(load_valid_tasks(job.task_set)), job.run)
    except DockerException:
        return []  # check_docker names the engine that does not answer
    except (BaseImageError, ToolchainError) as error:
        return [f"could not provide this node's base images and verifier toolchain: {error}"]
    print(
        f"node images on {socket.gethostname()}: {len(provided.provided)} base images provided now, verifier "
        f"toolchain {provided.toolchain.directory.name}",
        flush=True,
    )
    return []


def _archived_images(job: TrainJob, rank: int, timeout_sec: float) -> list[str]:
    from terminal_rl.sandbox.images.distribution import fetch, present, publish, wait_for_manifest
    from terminal_rl.sandbox.runtime.docker_client import docker_client

    sandbox, run = job.sandbox, job.run
    if not sandbox.build.archive_dir:
        return []
    archive = project_path(sandbox.build.archive_dir)
    client = docker_client(sandbox.docker_host)
    if rank == 0:
        images = {o.task_id: o.image for o in build_task_images(job, run.image_report) if o.ok}
        saved = publish(client, images, archive, run.run_id)
        print(f"task images: {len(images)} built, {len(saved)} newly archived in {archive}", flush=True)
    else:
        images = wait_for_manifest(archive, run.run_id, timeout_sec)
        loaded = fetch(client, images, archive)
        print(f"task images: loaded {len(loaded)} of {len(images)} from {archive}", flush=True)
    missing = sorted(set(images.values()) - set(present(client, images.values())))
    return [f"task images missing after distribution: {missing}"] if missing else []


def build_task_images(job: TrainJob, report: Path, only: list[str] | None = None) -> list:
    """Build (or find) the images of every valid task (or of the ids in ``only``) on this node's
    engine; returns the outcomes, also written to ``report``. A failed build's rollouts fail as
    sandbox errors and are masked."""
    from terminal_rl.sandbox.images.build_report import build_on_this_engine, outcome_line

    sandbox, run = job.sandbox, job.run
    wanted = None if only is None else set(only)
    tasks = [task for task in load_valid_tasks(job.task_set) if wanted is None or task.id in wanted]
    done = iter(range(1, len(tasks) + 1))

    def progress(outcome) -> None:  # one line a task image, in the node's Slurm log
        print(f"task image {next(done)}/{len(tasks)} on {socket.gethostname()}: {outcome_line(outcome)}", flush=True)

    return build_on_this_engine(sandbox, run.image_lock_dir, tasks, report, sandbox.build.jobs, progress)
