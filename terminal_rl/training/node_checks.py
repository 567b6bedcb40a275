"""What each node of a training run must provide, checked on that node before anything starts there:
the container engine and its base images, free disk, the engine seeing the job's files, the egress
network, offline weights, flash-attn, the judge's endpoint, room for the checkpoints.

Each check takes the run's ``TrainJob`` and returns its problems, one clear message each (the setting,
its value, the fix). ``launcher=local`` runs them in preflight; Slurm runs them on every node of the
job (``launch/node_prep.py``); ``SHARED_CHECKS`` also run where a job is submitted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from terminal_rl.config import free_disk_bytes, nearest_existing
from terminal_rl.tasks.task_set import TaskSetConfig
from terminal_rl.training.job import TrainJob

NodeCheck = Callable[[TrainJob], list[str]]


def split_of(task_set: TaskSetConfig) -> tuple[list, list]:
    """The task set's valid tasks, split as the run will split them (loaded once per task set)."""
    from terminal_rl.tasks.prepare import train_and_val

    key = repr(task_set)
    if key not in _SPLITS:
        _SPLITS[key] = train_and_val(task_set)[:2]
    return _SPLITS[key]


_SPLITS: dict[str, tuple] = {}


def check_docker(job: TrainJob) -> list[str]:
    """The engine answers, and every base image of the task set a recipe provides is here, with the
    common image the toolchain builds from. (A base image no recipe covers is not a problem here: its
    tasks' images fail to build and leave the run; ``python -m terminal_rl.tasks`` reports the fix.)"""
    from docker.errors import DockerException, ImageNotFound

    from terminal_rl.sandbox.images.base_images import common_tag, plan
    from terminal_rl.sandbox.runtime.docker_client import docker_client
    from terminal_rl.tasks.dockerfile import task_set_images
    from terminal_rl.tasks.loaders import TaskSourceError

    sandbox = job.sandbox
    try:
        train, val = split_of(job.task_set)
    except (TaskSourceError, ValueError):
        return []  # check_dataset reports it
    try:
        client = docker_client(sandbox.docker_host)
        needs = plan(client, sandbox.base_images, task_set_images(train + val))
        missing = sorted(needs.provide)
        try:
            client.images.get(common_tag(sandbox.base_images))
        except ImageNotFound:
            missing.insert(0, common_tag(sandbox.base_images))
    except DockerException as error:
        return [
            f"no Docker endpoint answers (sandbox.docker_host={sandbox.docker_host!r} / $DOCKER_HOST): {error}; "
            "start dockerd or `podman system service`"
        ]
    if missing:
        return [
            f"base images missing: {missing}; run `python -m terminal_rl.sandbox command=bootstrap` with this "
            "run's task_set (and sandbox) overrides"
        ]
    return []


def check_judge_answers(job: TrainJob, timeout_sec: float = 5) -> list[str]:
    """The judge's endpoint accepts a connection from this node, then answers one tiny request: the
    judge runs on any node of the run, and a compute node may lack the login node's way out; a key,
    model or parameter the endpoint refuses names its fix. Checked when the judge can be called (an
    explicit ``judge.base_url``, or a set key); otherwise every judged group would fall back to its
    test scores."""
    import socket
    from urllib.parse import urlsplit
    from urllib.request import getproxies, proxy_bypass

    from terminal_rl.judge.backend import JudgeBackend

    if job.judge is None:
        return []
    backend = JudgeBackend(job.judge.model, job.judge.base_url, job.judge.api_key_env)
    if not (backend.base_url or backend.api_key()):
        return []
    endpoint = backend.endpoint()
    if endpoint is None:
        return []
    url = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    # litellm's HTTP client goes through the environment's proxy (HTTPS_PROXY, NO_PROXY) as this does.
    proxy = None if proxy_bypass(url.hostname) else getproxies().get(url.scheme)
    target = urlsplit(proxy) if proxy else url
    try:
        socket.create_connection(
            (target.hostname, target.port or (443 if target.scheme == "https" else 80)), timeout_sec
        ).close()
    except OSError as error:
        through = f" through the proxy {proxy}" if proxy else ""
        return [
            f"the judge's endpoint {endpoint} ({backend.model}) does not answer from {socket.gethostname()}"
            f"{through}: {error}; give this node a way out (proxy, firewall) or point judge.base_url at an "
            "endpoint it reaches"
        ]
    problem = job.judge.endpoint_problem()
    return [f"the judge's model does not answer from {socket.gethostname()}: {problem}"] if problem else []


def check_disk(job: TrainJob) -> list[str]:
    """Free space where this node keeps run files (node-local root) and images (the engine's data root)."""
    from docker.errors import DockerException

    from terminal_rl.sandbox.runtime.docker_client import docker_client

    places = {"run.node_local_root": job.run.node_local_dir}
    try:
        places["the container engine's data root"] = Path(
            docker_client(job.sandbox.docker_host).info()["DockerRootDir"]
        )
    except (DockerException, KeyError):
        pass  # check_docker reports an engine that does not answer
    floor = float(job.hardware.min_free_disk_gb)
    problems = []
    for name, path in places.items():
        free_gb = free_disk_bytes(path) / 2**30
        if free_gb < floor:
            problems.append(
                f"{name} ({path}) has {free_gb:.1f} GB free, below hardware.min_free_disk_gb="
                f"{floor:g}; free space or point it elsewhere"
            )
    return problems


def check_checkpoint_disk(job: TrainJob) -> list[str]:
    """The checkpoints the run keeps fit in the free space of their directory: at the peak one more
    than kept (a save is written before the oldest is removed, verl ``checkpoint_manager.py``
    l. 166-194), less those already there (a resume's: their space is taken already)."""
    from terminal_rl.training.checkpoints import saved_steps

    plan = job.checkpoints
    existing = nearest_existing(plan.folder)
    present = len(saved_steps(plan.folder)) if plan.folder.is_dir() else 0
    needed_gb = max(0, plan.kept + 1 - present) * plan.size_gb if plan.kept else 0.0
    free_gb = free_disk_bytes(plan.folder) / 1e9
    if needed_gb <= free_gb:
        return []
    return [
        f"{plan.line}; at the peak {needed_gb:.1f} GB more (one more while a save replaces the oldest), but {existing} "
        f"has {free_gb:.1f} GB free: lower trainer.max_actor_ckpt_to_keep, raise trainer.save_freq, or point "
        "trainer.default_local_dir at a larger filesystem"
    ]


def check_model_offline(job: TrainJob) -> list[str]:
    """``model.path`` is a local folder or a Hub id in the run's shared Hub cache: every process of
    the run reads weights offline (HF_HUB_OFFLINE=1, ``models/hub.py``). A model the run makes itself
    (the tiny one, a warm start's SFT) is made before any worker needs it."""
    from terminal_rl.models.hub import download_command, find_offline, missing_weights

    run, path = job.run, job.model.path
    if job.model_made_by_run or run.hub_cache is None:
        return []
    folder = find_offline(path, run.hub_cache)
    if folder is None:
        return [
            f"model.path={path!r} is neither a local folder nor in the run's Hub cache ({run.hub_cache}), "
            "and the run's processes never download (HF_HUB_OFFLINE=1): run "
            f"`{download_command(path, run.hub_cache)}` "
            "once where the Hub is reachable (a login node), or set model.path to a local folder"
        ]
    missing = missing_weights(folder)
    if missing:
        return [
            f"model.path={path!r} at {folder} is incomplete (an interrupted download?): no {', '.join(missing)}; "
            f"run `{download_command(path, run.hub_cache)}` again"
        ]
    return []


def check_sandbox_mounts(job: TrainJob) -> list[str]:
    """The container engine sees the files this job writes under ``run.node_local_root``: sandboxes
    mount the lease folder and the toolchain from there. Under Slurm's job_container/tmpfs or a
    PrivateTmp, the job's /tmp is not the engine's, and every sandbox would find no lease and exit (every
    rollout masked). A probe container reads a file the job just wrote."""
    import secrets

    import requests
    from docker.errors import DockerException

    from terminal_rl.sandbox.images.base_images import common_tag
    from terminal_rl.sandbox.runtime.docker_client import docker_client
    from terminal_rl.sandbox.runtime.sandbox import sandbox_ulimits

    sandbox, run = job.sandbox, job.run
    try:
        client = docker_client(sandbox.docker_host)
        client.images.get(common_tag(sandbox.base_images))
    except DockerException:
        return []  # check_docker reports an engine that does not answer or a missing base image
    folder, token = run.lease_dir, secrets.token_hex(8)
    folder.mkdir(parents=True, exist_ok=True)
    probe = folder / f"probe-{token}"
    probe.write_text(token)
    # The verdict is the probe's exit status (its logs can be empty after a fast exit).
    command = ["sh", "-c", f'test "$(cat /probe/{probe.name})" = {token}']
    container = None
    try:
        container = client.containers.create(
            common_tag(sandbox.base_images),
            command,
            network_disabled=True,
            volumes={str(folder): {"bind": "/probe", "mode": "ro"}},
            ulimits=sandbox_ulimits(sandbox),
        )  # podman needs them explicit
        container.start()
        status = container.wait(timeout=120)["StatusCode"]
    except (DockerException, requests.exceptions.RequestException) as error:  # a wait that times out is requests'
        status = f"{type(error).__name__}: {str(error)[:200]}"
    finally:
        probe.unlink(missing_ok=True)
        if container is not None:
            container.remove(force=True)
    if status == 0:
        return []
    return [
        f"the container engine does not see what this job writes under run.node_local_root ({folder}): a probe "
        f"container did not read the file the job wrote there (exit {status}); the job's /tmp is likely private "
        "(Slurm job_container/tmpfs, PrivateTmp): set run.node_local_root (or $TERMINAL_RL_NODE_LOCAL_ROOT) to a "
        "node-local path the engine shares"
    ]


def check_egress_network(job: TrainJob) -> list[str]:
    """Tasks that allow network need the egress bridge; creating it fails once Docker's address pools
    are used up (about 31 networks with the default pools)."""
    from docker.errors import DockerException

    from terminal_rl.sandbox.runtime.docker_client import docker_client
    from terminal_rl.sandbox.runtime.network import ensure_egress_network
    from terminal_rl.tasks.task_set import load_task_set

    if not any(task.limits.network for task in load_task_set(job.task_set).tasks):
        return []
    sandbox = job.sandbox
    try:
        ensure_egress_network(
            docker_client(sandbox.docker_host), sandbox.container.egress_network, sandbox.container.egress_interface
        )
    except DockerException as error:
        return [
            f"could not create the egress network {sandbox.container.egress_network!r} for tasks that allow "
            f"network: {error}; if the address pools are exhausted, remove unused networks or set "
            "default-address-pools in /etc/docker/daemon.json (README, cluster prerequisites)"
        ]
    return []


def check_flash_attention(job: TrainJob) -> list[str]:
    """flash-attn is installed on this node when the run is configured to use it."""
    import importlib.util

    if job.hardware.attention == "flash_attention_2" and importlib.util.find_spec("flash_attn") is None:
        return [
            "hardware.attention=flash_attention_2 but flash-attn is not installed on this node: "
            "`pip install --no-build-isolation flash-attn -c constraints/gpu.txt` (README, GPU set), or use "
            "hardware.attention=sdpa with ulysses_parallel=1"
        ]
    return []


# What lives on the run's shared filesystem: checked where the run is submitted too, before an
# allocation starts (and again on each node, which may mount it differently).
SHARED_CHECKS: tuple[NodeCheck, ...] = (check_model_offline,)
# What each node of the run needs: run in preflight for launcher=local, on every node in the job otherwise.
NODE_CHECKS: tuple[NodeCheck, ...] = (
    check_docker,
    check_disk,
    check_checkpoint_disk,
    check_model_offline,
    check_sandbox_mounts,
    check_egress_network,
    check_flash_attention,
    check_judge_answers,
)


def node_problems(job: TrainJob) -> list[str]:
    """The node checks alone, on the node that calls it."""
    return [problem for check in NODE_CHECKS for problem in check(job)]
