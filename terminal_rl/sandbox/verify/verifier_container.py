"""The verifier container beside a sandbox, and the conversation with its runner (blocking; called
on the Docker thread pool). See ``verifier.py`` for what it guards against and ``verifier_runner.py``
for what runs inside.

The container is created from the sandbox's image (its root is the image as built, read-only: the
tests' pristine runtime) with the toolchain mounted read-only at ``/terminal_rl`` and the toolchain's
Python running our runner as root (the image's entrypoint, user and loader variables do not apply),
joined to the sandbox's PID and network namespaces, with the capabilities the runner needs to enter
the sandbox's mount namespace and build the tests' root (``SYS_ADMIN``, ``SYS_CHROOT``), to look for
interference (``SYS_PTRACE``) and to drop to the verifier uid (``SETUID``, ``SETGID``, ``SETPCAP``),
plus the sandbox's own (handed to the tests), and the sandbox's resource limits. AppArmor's default
profile forbids mounts, so it runs unconfined; seccomp stays on. Over its attach stream: wait for
``READY``, send the job, read ``RESULT <nonce>``.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from docker.errors import APIError, NotFound
from docker.types import Ulimit
from docker.utils.socket import STDOUT, frames_iter

from terminal_rl.sandbox.verify.toolchain import PREFIX, PYTHON
from terminal_rl.tasks.model import Limits

RUNNER = f"{PREFIX}/lib/verifier_runner.py"
RUNNER_CAPABILITIES = ("SYS_ADMIN", "SYS_CHROOT", "SYS_PTRACE", "SETUID", "SETGID", "SETPCAP")
# The image's loader variables, emptied for our runner (the loader ignores empty ones).
CLEARED = {"LD_PRELOAD": "", "LD_LIBRARY_PATH": "", "LD_AUDIT": ""}
# Start-up and the handshake, beyond the tests' own time limit.
SLACK_SEC = 60.0


def run_verifier_container(
    api,
    image: str,
    toolchain: Path,
    sandbox_id: str,
    job: dict,
    limits: Limits,
    labels: dict[str, str],
    ulimits: list[Ulimit],
) -> tuple[dict | None, str]:
    """(the runner's result, "") or (None, why there is none: "infrastructure: ..." when it is not
    the agent's doing)."""
    host_config = api.create_host_config(
        pid_mode=f"container:{sandbox_id}",
        network_mode=f"container:{sandbox_id}",
        cap_drop=["ALL"],
        cap_add=sorted(set(RUNNER_CAPABILITIES) | set(job["capabilities"])),
        security_opt=["apparmor=unconfined"],
        binds={str(toolchain): {"bind": PREFIX, "mode": "ro"}},
        read_only=True,
        mem_limit=f"{limits.memory_mb}m",
        memswap_limit=f"{limits.memory_mb}m",
        nano_cpus=int(limits.cpus * 1e9),
        pids_limit=limits.pids,
        ulimits=ulimits,
    )
    try:
        container = api.create_container(
            image,
            entrypoint=[PYTHON, "-I", "-S", RUNNER],
            user="0:0",
            working_dir="/",
            environment=CLEARED,
            healthcheck={"test": ["NONE"]},
            stdin_open=True,
            labels=labels,
            host_config=host_config,
        )["Id"]
    except APIError as error:
        return None, f"infrastructure: could not create the verifier container: {error.explanation}"
    try:
        stream = api.attach_socket(container, params={"stdin": 1, "stdout": 1, "stream": 1})
        raw = stream._sock
        raw.settimeout(job["timeout_sec"] + SLACK_SEC)
        api.start(container)
        return _converse(stream, raw, job)
    except (APIError, OSError) as error:
        return None, f"infrastructure: the verifier container failed: {error}"
    finally:
        _remove(api, container)


def _remove(api, container: str) -> None:
    """Remove the verifier container, stopped first (podman 4.3 refuses a forced removal of a
    container that has just stopped on its own: "could not be stopped: container state improper")."""
    try:
        api.kill(container)
    except (NotFound, APIError):
        pass
    try:
        api.wait(container, timeout=30)
        api.remove_container(container, v=True)  # with the anonymous volumes of the image's VOLUMEs
    except NotFound:
        pass
    except (APIError, OSError):
        try:
            api.remove_container(container, v=True, force=True)
        except (NotFound, APIError):
            pass


def _converse(stream, raw: socket.socket, job: dict) -> tuple[dict | None, str]:
    lines = _lines(stream)
    deadline = time.monotonic() + job["timeout_sec"] + SLACK_SEC
    first = next(lines, "")
    if first.startswith("INTERFERENCE"):
        return None, f"the agent interfered with the verifier: {first.removeprefix('INTERFERENCE ')[:300]}"
    if first != "READY":
        return None, f"infrastructure: the verifier did not start: {first[:300]!r}"
    raw.sendall(json.dumps(job).encode() + b"\n")
    expected = f"RESULT {job['nonce']} "
    for line in lines:
        if line.startswith(expected):
            try:
                return json.loads(line[len(expected) :]), ""
            except ValueError:
                break
        if time.monotonic() > deadline:
            break
    return None, "the verifier ended without a result (stopped or killed)"


def _lines(stream):
    """The runner's stdout, line by line."""
    pending = b""
    try:
        for kind, data in frames_iter(stream, tty=False):
            if kind != STDOUT:
                continue
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                yield line.decode("utf-8", "replace")
    except (socket.timeout, OSError):
        return
    if pending:
        yield pending.decode("utf-8", "replace")
