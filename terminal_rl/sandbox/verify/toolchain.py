"""The verifier's trusted toolchain: Python with pytest and requests, bash, coreutils, grep, sed, awk,
findutils, procps and curl, self-contained under ``/terminal_rl`` (its own dynamic loader and
libraries, see ``toolchain_build.py``), plus our verifier runner, the sandbox lease watcher and the
``sitecustomize`` its Python starts with.

It is built once per node, from the offline base image, into ``<run.node_local_root>/toolchain/<hash>``
(shared by every run) and mounted read-only at ``/terminal_rl`` in every sandbox and in every
verifier container (which starts from the task's own image). A changed recipe (packages, build
script, our files, base image) is a new hash.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import ImageNotFound

from terminal_rl.sandbox import inside
from terminal_rl.sandbox.inside import toolchain_build

PREFIX = toolchain_build.PREFIX
PACKAGES = (
    "python3-pytest",
    "python3-requests",
    "bash",
    "coreutils",
    "grep",
    "sed",
    "mawk",
    "findutils",
    "procps",
    "curl",
)
# Our files in the toolchain: package module -> path under PREFIX.
OUR_FILES = {
    "verifier_runner.py": "lib/verifier_runner.py",
    "lease_watch.py": "lib/lease_watch.py",
    "toolchain_site.py": "lib/site/sitecustomize.py",
}
# Empty directories the verifier runner mounts on (verifier_runner.py).
MOUNTPOINTS = ("work", "image", "shims")
PYTHON = f"{PREFIX}/usr/bin/python3.11"
# Our files that run inside containers (terminal_rl/sandbox/inside/).
INSIDE = Path(inside.__file__).parent
BIN_DIRS = (f"{PREFIX}/usr/bin", f"{PREFIX}/usr/sbin")
_READY = ".ready"


class ToolchainError(RuntimeError):
    """The toolchain could not be built; the message says which step failed."""


@dataclass(frozen=True)
class Toolchain:
    # Host directory mounted read-only at PREFIX in sandboxes and verifier containers.
    directory: Path


def recipe_hash(base_image_id: str) -> str:
    here = INSIDE
    digest = hashlib.sha256(json.dumps([PACKAGES, base_image_id]).encode())
    for name in ["toolchain_build.py", *OUR_FILES]:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


def ensure_toolchain(client: docker.DockerClient, base_image: str, root: Path, ulimits: list) -> Toolchain:
    """The node's toolchain for ``base_image`` under ``root`` (built when missing, under a file lock so
    concurrent processes build it once)."""
    try:
        digest = recipe_hash(client.images.get(base_image).id)
    except ImageNotFound as error:
        raise ToolchainError(
            f"the toolchain builds from {base_image}, which is not here: run "
            "`python -m terminal_rl.sandbox command=bootstrap` first"
        ) from error
    directory = root / digest
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (directory / _READY).is_file():
            _build(client, base_image, directory, ulimits)
    return Toolchain(directory)


def _build(client: docker.DockerClient, base_image: str, directory: Path, ulimits: list) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    here = INSIDE
    command = [
        "sh",
        "-c",
        "apt-get update -qq && apt-get install -y -qq --no-install-recommends patchelf "
        f"{' '.join(PACKAGES)} >/dev/null && python3 /build.py /out {' '.join(PACKAGES)}",
    ]
    container = client.containers.create(
        base_image,
        command,
        ulimits=ulimits,
        volumes={
            str(here / "toolchain_build.py"): {"bind": "/build.py", "mode": "ro"},
            str(directory): {"bind": "/out", "mode": "rw"},
        },
    )
    try:
        container.start()
        status = container.wait(timeout=1800)
        if status["StatusCode"] != 0:
            tail = container.logs(tail=30).decode("utf-8", "replace")
            raise ToolchainError(
                f"building the verifier toolchain from {base_image} failed (exit {status['StatusCode']}):\n{tail}"
            )
    finally:
        container.remove(force=True)
    for module, target in OUR_FILES.items():
        destination = directory / target
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(here / module, destination)
    for name in MOUNTPOINTS:
        (directory / name).mkdir()
    (directory / _READY).write_text(base_image)
