"""``launcher=slurm``: submit a training run to Slurm with submitit, and run it there.

Submission (the login node): one Slurm task per node, resources from the ``hardware`` preset, the
config resolved here (one run id for every node). It prints the job id and where the logs go.

In the job (every node): rank 0 starts the Ray head, the others join it (address from the Slurm node
list, CPU and GPU counts from the allocation; ``hardware=cpu`` brings its own fake GPUs); every node
is prepared first (node checks, task images: ``node_prep.py``); once all nodes are in, rank 0 runs
the trainer and the others wait for it.
Whatever happens, every node removes this run's sandbox containers on the way out (a rootful Docker
daemon keeps containers outside the job's cgroup); for a task killed before it could, the admin
epilog does it (``epilog.py``). Preemption and time limits requeue the job, which
resumes from its last checkpoint, up to ``max_restarts`` times.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import submitit
from omegaconf import DictConfig

from terminal_rl.config import to_dataclass
from terminal_rl.launch.epilog import mark_job_processes
from terminal_rl.launch.markers import (
    FIRST_IMAGES,
    IMAGES,
    PREPARED,
    RAY_NODES,
    attempt_marker,
    done_marker,
    rank_marker,
    wait_for_ranks,
    write_json,
)
from terminal_rl.launch.node_prep import build_task_images, prepare_node
from terminal_rl.run_context import RunContext
from terminal_rl.training.job import HardwareConfig, TrainJob
from terminal_rl.training.preemption import clear, exchange_folder, request_save, wait_for_save

# Ray's ports of a node (node_port_base): jobs sharing a host take different slots.
PORT_BASE, JOB_SLOTS, RANK_PORTS = 11000, 20, 100
PR_SET_PDEATHSIG = 1  # linux/prctl.h
# This node's `ray start --block` process, stopped before the janitor runs on SIGTERM.
_NODE_RAY: subprocess.Popen | None = None


@dataclass(frozen=True)
class SlurmLauncherConfig:
    kind: str
    partition: str | None
    account: str | None
    qos: str | None
    constraint: str | None
    time_min: int
    signal_delay_s: float
    mem_gb: float
    max_restarts: int
    ray_port: int
    join_timeout_sec: float
    image_timeout_sec: float
    preflight_only: bool
    additional: dict


def submit(
    run: RunContext, hardware: HardwareConfig, launcher_section: DictConfig, body, nodes: int | None = None
) -> submitit.Job:
    """Submit one Slurm job running ``body`` on every node (``hardware.nodes`` of them, or ``nodes``);
    returns the submitit job."""
    launcher = to_dataclass(launcher_section, SlurmLauncherConfig)
    folder = run.log_dir / "slurm"
    # submitit stops requeueing after max_num_timeout time limits (3 by default): as many as restarts.
    executor = submitit.AutoExecutor(folder=folder, cluster="slurm", slurm_max_num_timeout=launcher.max_restarts)
    executor.update_parameters(**slurm_parameters(hardware, launcher, run.run_id, nodes))
    job = executor.submit(body)
    print(
        f"submitted Slurm job {job.job_id} for run {run.run_id}\n"
        f"  logs: {job.paths.stdout} (and .err), one per node: {folder}/{job.job_id}_<rank>_log.out\n"
        f"  run directory: {run.shared_dir}"
    )
    return job


def slurm_parameters(
    hardware: HardwareConfig, launcher: SlurmLauncherConfig, run_id: str, nodes: int | None = None
) -> dict:
    """submitit's parameters: one task per node; resources from the hardware preset (``nodes``
    overrides its node count), cluster specifics from the launcher config (and conf/local/slurm.yaml
    merged into it)."""
    # srun in Slurm 22.05-23.02 does not inherit --cpus-per-task from the allocation: it is passed
    # again; a node whose task fails (its preflight, say) ends the others at once instead of leaving
    # them waiting for it (--kill-on-bad-exit). Requeue on preemption is asked for explicitly (a
    # cluster's default may be off).
    parameters = dict(
        nodes=nodes or hardware.nodes,
        tasks_per_node=1,
        cpus_per_task=hardware.cpus_per_node,
        mem_gb=launcher.mem_gb,
        timeout_min=launcher.time_min,
        name=f"trl-{run_id}",
        slurm_signal_delay_s=int(launcher.signal_delay_s),
        slurm_srun_args=[f"--cpus-per-task={hardware.cpus_per_node}", "--kill-on-bad-exit=1"],
    )
    if hardware.device == "cuda":
        parameters["gpus_per_node"] = hardware.gpus_per_node
    for key in ("partition", "account", "qos", "constraint"):
        if getattr(launcher, key):
            parameters[f"slurm_{key}"] = getattr(launcher, key)
    parameters["slurm_additional_parameters"] = {"requeue": True, **dict(launcher.additional)}
    return parameters


class SlurmRun(submitit.helpers.Checkpointable):
    """The job body, run once per node (one Slurm task per node). ``job``: the training run, its verl
    config resolved where it was submitted (one run id for every node)."""

    def __init__(self, job: TrainJob, restarts: int = 0):
        self.job = job
        self.restarts = restarts

    def __call__(self) -> str:
        job = self.job
        env = submitit.JobEnvironment()
        mark_job_processes()
        run = job.run
        # Ray's token authentication for the job's cluster: `ray start`, every driver and worker read
        # the run's own token (its shared directory), not ~/.ray/auth_token, which a fresh account or
        # a home not shared between nodes does not have.
        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ["RAY_AUTH_TOKEN_PATH"] = str(ray_auth_token(run))
        launcher = to_dataclass(job.launcher, SlurmLauncherConfig)
        _remove_sandboxes_on_exit(job.sandbox.docker_host, run)
        try:
            prepare_node(job, env.global_rank, launcher.image_timeout_sec)
            rank_marker(run, env.job_id, env.global_rank, PREPARED).write_text("prepared")
            if launcher.preflight_only:
                return "preflight ok"
            return (
                self._head(job, env, run, launcher) if env.global_rank == 0 else self._worker(job, env, run, launcher)
            )
        finally:
            janitor(job.sandbox.docker_host, run)

    def checkpoint(self, *args, **kwargs):
        """Called by submitit on rank 0 when Slurm signals a time limit or preemption
        (``launcher.signal_delay_s`` ahead): ask the trainer for a checkpoint at the end of its
        current step and wait for it (``training/preemption.py``), then requeue (the next attempt
        resumes there) unless the run has used up its restarts."""
        launcher = to_dataclass(self.job.launcher, SlurmLauncherConfig)
        folder = exchange_folder(self.job.run)
        request_save(folder)
        # Leave a margin for the requeue itself and Slurm's kill: the rest of the delay is the save's.
        step = wait_for_save(folder, max(launcher.signal_delay_s - 60, 1))
        print(
            f"requeue: the trainer saved step {step}"
            if step is not None
            else f"requeue: no save within launcher.signal_delay_s={launcher.signal_delay_s:g} s (a step and its save "
            "take longer: raise it); resuming from the last checkpoint",
            flush=True,
        )
        if self.restarts >= launcher.max_restarts:
            return None
        return submitit.helpers.DelayedSubmission(SlurmRun(self.job, self.restarts + 1))

    def _head(self, job: TrainJob, env, run: RunContext, launcher: SlurmLauncherConfig) -> str:
        from terminal_rl.integrations.verl.driver import apply_environment, job_environment, start_ray, train

        address = f"{head_address(env)}:{ray_port(launcher, env)}"
        # Drivers on this node must present this node's Slurm address to Ray, not a guessed one.
        os.environ["TERMINAL_RL_NODE_IP"] = head_address(env)
        done = done_marker(run, env.job_id)
        clear(exchange_folder(run))  # an earlier attempt's save request is answered or moot
        ray = ray_node(
            job.hardware,
            run,
            env,
            ["--head", f"--port={ray_port(launcher, env)}", f"--node-ip-address={head_address(env)}"],
        )
        try:
            # The join timer starts once every node is prepared: loading an image archive can take
            # up to image_timeout_sec on the others.
            wait_for_ranks(
                run, env.job_id, range(env.num_nodes), PREPARED, launcher.image_timeout_sec + launcher.join_timeout_sec
            )
            wait_for_nodes(address, env.num_nodes, launcher.join_timeout_sec, run, env.job_id)
            os.environ["RAY_ADDRESS"] = address
            variables = job_environment(job)
            apply_environment(variables)

            def nodes_ready(first: list[str]) -> None:
                """Every node built the head's first images and is still in the cluster: step 1 may start."""
                write_json(attempt_marker(run, env.job_id, FIRST_IMAGES), first)
                reports = wait_for_ranks(run, env.job_id, range(1, env.num_nodes), IMAGES, launcher.image_timeout_sec)
                for rank, report in sorted(reports.items()):
                    for task_id, reason in json.loads(report)["failed"].items():
                        print(
                            f"node rank {rank}: task {task_id}'s image does not build there ({reason[:160]}); "
                            "its rollouts on that node are masked",
                            flush=True,
                        )
                wait_for_nodes(address, env.num_nodes, launcher.join_timeout_sec, run, env.job_id)
                print(f"all {env.num_nodes} nodes prepared, with the {len(first)} first task images each", flush=True)

            start_ray(job, variables)
            _remove_sandboxes_on_exit(job.sandbox.docker_host, run)  # again: ray.init installed its own SIGTERM handler
            train(job, variables, nodes_ready)
        finally:
            done.write_text("done")
            stop(ray)
        return f"trained on {env.num_nodes} node(s)"

    def _worker(self, job: TrainJob, env, run: RunContext, launcher: SlurmLauncherConfig) -> str:
        address = f"{head_address(env)}:{ray_port(launcher, env)}"
        done = done_marker(run, env.job_id)
        # The head checks the join once every node is prepared, which may wait for an archive build.
        deadline = time.monotonic() + launcher.image_timeout_sec + launcher.join_timeout_sec
        ray = ray_node(job.hardware, run, env, [f"--address={address}"])
        try:
            while not joined(run, env):  # in the head's list of alive Ray nodes
                if ray.poll() is not None:  # the head was not up yet: start again
                    time.sleep(2)
                    ray = ray_node(job.hardware, run, env, [f"--address={address}"])
                if done.exists() or time.monotonic() > deadline:
                    raise RuntimeError(f"could not join the Ray head at {address}: see {ray_log(run, env)}")
                time.sleep(1)
            print(f"node rank {env.global_rank} joined the Ray head at {address}", flush=True)
            first = attempt_marker(run, env.job_id, FIRST_IMAGES)
            while not (first.exists() or done.exists()) and ray.poll() is None:
                time.sleep(2)
            if first.exists():
                self._first_images(job, env, run, json.loads(first.read_text()))
            while not done.exists() and ray.poll() is None:
                time.sleep(2)
        finally:
            stop(ray)
        return "worker done"

    @staticmethod
    def _first_images(job: TrainJob, env, run: RunContext, task_ids: list[str]) -> None:
        """Build the head's first task images on this node's engine and report them to the head."""
        outcomes = build_task_images(job, rank_marker(run, env.job_id, env.global_rank, "image_builds.json"), task_ids)
        failed = {o.task_id: f"{o.category}: {o.reason}" for o in outcomes if not o.ok}
        built = sum(o.ok and not o.cached for o in outcomes)
        print(
            f"first task images on this node: {built} built, {len(outcomes) - built - len(failed)} present, "
            f"{len(failed)} failed",
            flush=True,
        )
        ok = {o.task_id for o in outcomes if o.ok}
        write_json(
            rank_marker(run, env.job_id, env.global_rank, IMAGES),
            {"built": [task_id for task_id in task_ids if task_id in ok], "failed": failed},
        )


def ray_auth_token(run: RunContext) -> Path:
    """The run's Ray token file (mode 0600, in the run's shared directory), made by the first node
    that gets here and read by the others; the same token serves every attempt of the run."""
    path = run.shared_dir / "ray_auth_token"
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written under a name of this node's own, then linked into place: the token appears whole or
    # not at all (a node that dies mid-write leaves no empty token behind), and the first link wins.
    partial = path.with_name(f".ray_auth_token.{socket.gethostname()}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_hex(32))
    try:
        os.link(partial, path)
    except FileExistsError:
        pass  # another node's token is the run's
    finally:
        partial.unlink()
    return path


def head_address(env) -> str:
    return node_address(env.hostnames[0])


def node_address(name: str) -> str:
    """A node's IP address as Slurm knows it (NodeAddr), which need not be a resolvable host name."""
    shown = subprocess.run(["scontrol", "show", "node", name, "-o"], capture_output=True, text=True).stdout
    fields = dict(f.split("=", 1) for f in shown.split() if "=" in f)
    return socket.gethostbyname(fields.get("NodeAddr", name))


def ray_port(launcher: SlurmLauncherConfig, env) -> int:
    return launcher.ray_port + int(str(env.job_id).split("_")[0]) % 1000


def node_port_base(job_id, rank: int) -> int:
    """The first of this job's and node's Ray ports: per job (JOB_SLOTS slots of 1000) and rank
    (RANK_PORTS each, up to 10 nodes), all below Linux's ephemeral range (32768-60999, where the
    kernel picks the source ports of outgoing connections, so a fixed port there can be taken)."""
    if not 0 <= rank < 1000 // RANK_PORTS:
        raise ValueError(f"node rank {rank}: the Ray port plan holds {1000 // RANK_PORTS} nodes a job")
    return PORT_BASE + int(str(job_id).split("_")[0]) % JOB_SLOTS * 1000 + RANK_PORTS * rank


def ray_node(hardware: HardwareConfig, run: RunContext, env, extra: list[str]) -> subprocess.Popen:
    """Start this node's Ray processes (``ray start --block``, in a process group of their own so
    stopping them never touches other jobs' Ray on the same host, and told to shut down if this
    process dies first, even by SIGKILL). Resources come from the allocation (or the cpu preset's
    fake GPUs); ports and temp dir are this job's and rank's own."""
    global _NODE_RAY
    cpus = int(os.environ.get("SLURM_CPUS_ON_NODE", hardware.cpus_per_node))
    gpus = len([g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g])
    if hardware.device == "cpu":
        cpus, gpus = hardware.ray_num_cpus, hardware.ray_num_gpus
    base = node_port_base(env.job_id, env.global_rank)
    command = [
        str(Path(sys.executable).with_name("ray")),
        "start",
        "--block",
        *extra,
        f"--num-cpus={cpus}",
        f"--num-gpus={gpus}",
        f"--temp-dir=/tmp/ray-{env.job_id}-{env.global_rank}",
        f"--node-manager-port={base}",
        f"--object-manager-port={base + 1}",
        f"--dashboard-agent-listen-port={base + 2}",
        f"--dashboard-agent-grpc-port={base + 3}",
        f"--runtime-env-agent-port={base + 4}",
        f"--metrics-export-port={base + 5}",
        f"--min-worker-port={base + 10}",
        f"--max-worker-port={base + RANK_PORTS - 1}",
    ]
    if "--head" in extra:
        command += ["--include-dashboard=false", f"--ray-client-server-port={base + 6}"]
    else:
        command.append(f"--node-ip-address={node_address(env.hostnames[env.global_rank])}")
    with ray_log(run, env).open("a") as log:
        _NODE_RAY = subprocess.Popen(
            command, start_new_session=True, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_ray_preexec()
        )
    return _NODE_RAY


def _ray_preexec():
    """A pre-exec hook for this node's Ray: it gets SIGTERM when this process dies (libc resolved
    beforehand), and ignores Slurm's warning signal. Slurm sends ``--signal`` to every process of the
    job step, and SIGUSR2's default action ends Ray's raylet, GCS and ``ray start`` at once (seen with
    Ray 2.60): the save it asks for could never happen. An ignored signal stays ignored across exec."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    warning = submitit.JobEnvironment._usr_sig()

    def hook():
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        signal.signal(warning, signal.SIG_IGN)

    return hook


def ray_log(run: RunContext, env) -> Path:
    """Where this node's ``ray start`` writes (beside submitit's logs)."""
    return run.log_dir / "slurm" / f"{env.job_id}_{env.global_rank}_ray.log"


def stop(ray: subprocess.Popen, timeout_sec: float = 60) -> None:
    """Stop this node's Ray: SIGTERM to its process group (`ray start --block` shuts its processes
    down), then SIGKILL to whatever of the group is left, so no worker outlives it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(ray.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        ray.wait(timeout=timeout_sec)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(ray.pid, signal.SIGKILL)
    ray.wait()


def wait_for_nodes(address: str, count: int, timeout_sec: float, run: RunContext, job_id: str) -> None:
    """Until ``count`` Ray nodes are alive (Ray's own node table, ``ray.nodes()``), through this
    process's Ray connection or a brief one of its own; their node-manager ports go to the
    ``ray_nodes.json`` marker, where each worker finds its own (``joined``)."""
    import ray

    connected_here = not ray.is_initialized()
    deadline = time.monotonic() + timeout_sec
    while connected_here:  # the head's GCS may not answer yet
        try:
            ray.init(address=address, _node_ip_address=os.environ["TERMINAL_RL_NODE_IP"])
            break
        except ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)
    try:
        while len(alive := [n for n in ray.nodes() if n["Alive"]]) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(alive)} of {count} nodes are alive in the Ray cluster")
            time.sleep(2)
        write_json(attempt_marker(run, job_id, RAY_NODES), [n["NodeManagerPort"] for n in alive])
        print(
            f"Ray cluster has {len(alive)} nodes:",
            *(
                f"{n['NodeID'][:12]} at {n['NodeManagerAddress']}:{n['NodeManagerPort']} with "
                f"{n['Resources'].get('CPU', 0):g} CPUs, {n['Resources'].get('GPU', 0):g} GPUs"
                for n in alive
            ),
            sep="\n  ",
        )
    finally:
        if connected_here:
            ray.shutdown()


def joined(run: RunContext, env) -> bool:
    """Whether the head saw this node alive in Ray (by its node-manager port, unique per job and rank;
    nodes of a test cluster share one address)."""
    seen = attempt_marker(run, env.job_id, RAY_NODES)
    return seen.exists() and node_port_base(env.job_id, env.global_rank) in json.loads(seen.read_text())


def janitor(docker_host: str, run: RunContext) -> None:
    """Remove this run's sandbox containers on this node (they live outside the job's cgroup)."""
    from terminal_rl.sandbox.lifecycle.janitor import sweep_until_settled
    from terminal_rl.sandbox.runtime.docker_client import docker_client

    try:
        sweep_until_settled(docker_client(docker_host), run_id=run.run_id)
    except Exception as error:  # never mask the job's own outcome
        print(f"janitor on {socket.gethostname()} failed: {error}", file=sys.stderr)


def _remove_sandboxes_on_exit(docker_host: str, run: RunContext) -> None:
    """scancel sends SIGTERM before SIGKILL: stop this node's Ray first (its rollout workers would go
    on starting sandboxes), then sweep this run's containers, then die."""
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum, frame):
        if _NODE_RAY is not None:
            stop(_NODE_RAY, timeout_sec=5)  # within Slurm's KillWait before SIGKILL
        janitor(docker_host, run)
        if callable(previous):
            previous(signum, frame)
        else:
            raise SystemExit(143)

    signal.signal(signal.SIGTERM, handler)
