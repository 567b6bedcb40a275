"""One fresh, isolated container per rollout, and the factory that starts and always removes them.

Isolation: memory (no swap), cpus, pids, all capabilities dropped but a few that apt-get, pip and
services need, ``no-new-privileges``, no network unless the task allows it (then egress to the
outside only, see ``network.py``). The verifier's trusted toolchain is mounted read-only at
``/terminal_rl``. The container's main process watches its owner's lease (``lease.py``) and exits
when the owner is gone or the task's budget plus a grace is spent; the container is auto-removed,
so even the sandboxes of a SIGKILLed run disappear by themselves; the janitor is a second net.

Not guarded against: kernel exploits (containers share the host kernel), and anything a task image
itself is built to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from docker.errors import APIError, NotFound
from docker.types import Ulimit

from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.images.base_images import common_tag
from terminal_rl.sandbox.images.images import ImageBuildError, TaskImages
from terminal_rl.sandbox.lifecycle.janitor import sweep_periodically
from terminal_rl.sandbox.lifecycle.lease import MOUNT_POINT, Lease
from terminal_rl.sandbox.lifecycle.node_slots import NodeSlots
from terminal_rl.sandbox.lifecycle.owner import Owner
from terminal_rl.sandbox.runtime.docker_client import AsyncDocker, docker_client
from terminal_rl.sandbox.runtime.files import ContainerFiles
from terminal_rl.sandbox.runtime.network import ensure_egress_network
from terminal_rl.sandbox.runtime.shell import STATE_DIR_PREFIX, CommandResult, SessionBroken, ShellSession
from terminal_rl.sandbox.runtime.terminal import Terminal
from terminal_rl.sandbox.verify.toolchain import PREFIX, PYTHON, Toolchain, ensure_toolchain
from terminal_rl.sandbox.verify.verifier_container import run_verifier_container
from terminal_rl.tasks.model import Limits, Task

# Mounted by us into every sandbox, so never the agent's changes.
OUR_MOUNTS = (PREFIX, MOUNT_POINT)
# What the container's diff shows that no agent made: our mounts, the shell session's state, the
# engine's init binary (dockerd's --init; podman's lives under /run).
NOT_THE_AGENTS = (*OUR_MOUNTS, STATE_DIR_PREFIX, "/usr/sbin/docker-init", "/run/podman-init")

LEASE_WATCH = f"{PREFIX}/lib/lease_watch.py"


class SandboxError(RuntimeError):
    """Infrastructure failure (Docker, image, session): not the agent's fault, kept apart from it."""


@dataclass(frozen=True)
class SandboxSpec:
    """What to start: an image under a task's limits, with files written in before the agent starts."""

    image: str
    limits: Limits
    files: dict[str, bytes]
    rollout_id: str = ""


class Sandbox:
    """A running container: the agent's shell, the keystroke terminal, file tools, its verifier."""

    def __init__(
        self,
        docker: AsyncDocker,
        container_id: str,
        attrs: dict,
        session: ShellSession,
        control: ShellSession,
        config: SandboxConfig,
        factory: SandboxFactory,
    ):
        self.docker = docker
        self.container_id = container_id
        self.workdir = attrs["Config"].get("WorkingDir") or "/"
        # The image as built (the verifier container starts from it: the tests' pristine runtime).
        self.image_id: str = attrs["Image"]
        # The image's environment (the verifier hands its harmless part to the tests).
        self.image_env: list[str] = attrs["Config"].get("Env") or []
        self.capabilities: list[str] = list(config.container.cap_add)
        self.session = session
        self.control = control
        self._factory = factory
        self.files = ContainerFiles(docker, container_id, control, config.session.file_max_bytes, self.workdir)
        self.terminal = Terminal(control, config.session.terminal_width, config.session.terminal_height)
        self._default_timeout = config.session.default_timeout_sec

    async def run(self, command: str, timeout: float | None = None) -> CommandResult:
        """Run a shell command in the agent's persistent session."""
        return await self.session.run(command, timeout or self._default_timeout)

    async def changes(self) -> dict[str, str]:
        """What the agent changed in the container against its image (the engine's diff): path ->
        added, modified or deleted. Left out: ``NOT_THE_AGENTS``, and directories listed only because
        something inside them changed."""
        kinds = {0: "modified", 1: "added", 2: "deleted"}
        listed = await self.docker.call(self.docker.api.diff, self.container_id) or []
        changed = {
            entry["Path"]: kinds.get(entry["Kind"], str(entry["Kind"]))
            for entry in listed
            if not entry["Path"].startswith(NOT_THE_AGENTS)
        }
        parents = {parent for path in changed for parent in _parents(path)}
        return {path: kind for path, kind in changed.items() if path not in parents}

    async def run_verifier(self, job: dict, limits: Limits) -> tuple[dict | None, str]:
        """Run a verification job in a trusted verifier container beside this sandbox
        (``verifier_container.py``)."""
        factory = self._factory
        return await self.docker.call(
            run_verifier_container,
            self.docker.api,
            self.image_id,
            factory.toolchain.directory,
            self.container_id,
            job,
            limits,
            factory.owner.labels(factory.run_id, "verifier"),
            factory.ulimits,
        )


def _parents(path: str) -> list[str]:
    parts = path.rstrip("/").split("/")
    return ["/".join(parts[:i]) or "/" for i in range(1, len(parts))]


def sandbox_ulimits(config: SandboxConfig) -> list[Ulimit]:
    """The open-file and process limits every container of ours gets (podman needs them explicit)."""
    container = config.container
    return [
        Ulimit(name="nofile", soft=container.nofile, hard=container.nofile),
        Ulimit(name="nproc", soft=container.nproc, hard=container.nproc),
    ]


class SandboxFactory:
    """Starts sandboxes for one run in this process; at most ``max_sandboxes`` alive at once on the
    node, across every process of the run there (``node_slots.py``).

    Use as ``async with SandboxFactory(...) as factory``: entering sweeps orphans left by dead
    processes and keeps the janitor running beside the rollouts; leaving stops it.
    """

    def __init__(self, config: SandboxConfig, run: RunContext):
        self.config = config
        self.run = run
        self.run_id = run.run_id
        self.docker = AsyncDocker(docker_client(config.docker_host, config.docker_threads), config.docker_threads)
        self.images = TaskImages(self.docker, config.build, run.image_lock_dir)
        self.owner = Owner.current()
        self.lease = Lease(run.lease_dir, config.lease.renew_sec)
        self.toolchain: Toolchain | None = None
        self.ulimits = sandbox_ulimits(config)
        self._slots = NodeSlots(run.sandbox_slots_dir, config.max_sandboxes)
        self._egress_ready = False
        self._janitor: asyncio.Task | None = None

    async def __aenter__(self) -> SandboxFactory:
        self.toolchain = await self.docker.call(
            ensure_toolchain,
            self.docker.client,
            common_tag(self.config.base_images),
            self.run.toolchain_root,
            self.ulimits,
        )
        self.lease.start()
        janitor = self.config.janitor
        self._janitor = asyncio.create_task(
            sweep_periodically(self.docker.client, janitor.ttl_sec, janitor.interval_sec)
        )
        return self

    async def __aexit__(self, *exc_info) -> None:
        if self._janitor is not None:
            self._janitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._janitor
        self.lease.stop()
        self.docker.close()

    @contextlib.asynccontextmanager
    async def task_sandbox(
        self, task: Task, rollout_id: str = "", on_slot: Callable[[], None] | None = None
    ) -> AsyncIterator[Sandbox]:
        """A sandbox for one rollout of ``task``: its image (built once), limits and pre-agent files.
        ``on_slot()`` is called once the node's sandbox slot is held (the wait for it is over)."""
        try:
            image = (await self.images.ensure(task)).image
        except ImageBuildError as error:
            raise SandboxError(str(error)) from error
        async with self.sandbox(SandboxSpec(image, task.limits, task.files, rollout_id), on_slot) as sandbox:
            yield sandbox

    @contextlib.asynccontextmanager
    async def sandbox(self, spec: SandboxSpec, on_slot: Callable[[], None] | None = None) -> AsyncIterator[Sandbox]:
        """A started sandbox, removed when the block ends on every path (error, timeout, cancellation)."""
        async with self._slots.hold():
            if on_slot is not None:
                on_slot()
            container_id = await self._create(spec)
            try:
                sandbox = await self._attach(container_id)
                for path, data in sorted(spec.files.items()):
                    await sandbox.files.write_bytes(path, data)
                yield sandbox
            finally:
                removal = asyncio.ensure_future(self.remove(container_id))
                await asyncio.shield(removal)

    async def remove(self, container_id: str) -> None:
        try:
            await self.docker.call(self.docker.api.remove_container, container_id, force=True, v=True)
        except NotFound:
            pass
        except APIError as error:  # auto-removal already under way
            if error.status_code != 409:
                raise

    async def _create(self, spec: SandboxSpec) -> str:
        limits, container = spec.limits, self.config.container
        if limits.network and not self._egress_ready:
            await self.docker.call(
                ensure_egress_network, self.docker.client, container.egress_network, container.egress_interface
            )
            self._egress_ready = True
        budget = limits.agent_timeout_sec + limits.verifier_timeout_sec + container.grace_sec
        rollout_id = spec.rollout_id or uuid.uuid4().hex[:12]
        host_config = self.docker.api.create_host_config(
            mem_limit=f"{limits.memory_mb}m",
            memswap_limit=f"{limits.memory_mb}m",
            nano_cpus=int(limits.cpus * 1e9),
            pids_limit=limits.pids,
            cap_drop=["ALL"],
            cap_add=list(container.cap_add),
            security_opt=["no-new-privileges"],
            network_mode=container.egress_network if limits.network else "none",
            init=True,
            auto_remove=True,
            ulimits=self.ulimits,
            binds={
                str(self.toolchain.directory): {"bind": PREFIX, "mode": "ro"},
                str(self.lease.folder): {"bind": MOUNT_POINT, "mode": "ro"},
            },
        )
        watch = [
            PYTHON,
            "-I",
            "-S",
            LEASE_WATCH,
            self.lease.mounted_path,
            str(self.config.lease.stale_sec),
            str(int(budget)),
        ]
        try:
            created = await self.docker.call(
                self.docker.api.create_container,
                spec.image,
                command=watch,
                labels=self.owner.labels(self.run_id, rollout_id),
                host_config=host_config,
                hostname="sandbox",
                network_disabled=not limits.network,
            )
            container_id = created["Id"]
        except APIError as error:
            raise SandboxError(f"could not create a container from {spec.image}: {error.explanation}") from error
        try:
            await self.docker.call(self.docker.api.start, container_id)
        except APIError as error:
            await self.remove(container_id)
            raise SandboxError(f"could not start a container from {spec.image}: {error.explanation}") from error
        return container_id

    async def _attach(self, container_id: str) -> Sandbox:
        """Open the control shell and the agent's shell side by side; the agent's timeouts are
        enforced by killing the command's process group from the control shell."""
        limits = self.config.session
        opened: dict[str, ShellSession] = {}

        async def kill(pgid: int) -> None:
            # SIGKILL is delivered asynchronously: wait (up to 5 s) until the group is gone, so the
            # next command never sees the killed one's processes, nor their output (ShellSession._kill).
            result = await opened["control"].run(
                f"kill -KILL -- -{pgid} 2>/dev/null; for _ in $(seq 100); do kill -0 -- -{pgid} 2>/dev/null "
                f"|| break; sleep 0.05; done; ! kill -0 -- -{pgid} 2>/dev/null",
                timeout=30,
                inline=True,
            )
            if result.exit_code != 0:
                raise SessionBroken(f"process group {pgid} outlived SIGKILL by 5 s")

        def open_shell(killer=None):
            return ShellSession.open(
                self.docker,
                container_id,
                head_bytes=limits.output_head_bytes,
                tail_bytes=limits.output_tail_bytes,
                killer=killer,
            )

        try:
            attrs, opened["control"], session = await asyncio.gather(
                self.docker.call(self.docker.api.inspect_container, container_id), open_shell(), open_shell(kill)
            )
        except Exception as error:
            raise SandboxError(f"could not attach to container {container_id[:12]}: {error}") from error
        return Sandbox(self.docker, container_id, attrs, session, opened["control"], self.config, self)
