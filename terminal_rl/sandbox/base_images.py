"""Offline base images: no registry is reachable (and many clusters' compute nodes are air-gapped).

``debootstrap`` builds a minimal Debian root filesystem from the Debian package mirror, ``docker
import`` turns it into an image, and the image is tagged with every alias task Dockerfiles build
FROM. pip works system-wide as those Dockerfiles expect (``PIP_BREAK_SYSTEM_PACKAGES=1``). The image
is labelled with a hash of its recipe, so a changed recipe rebuilds and an unchanged one is reused.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from pathlib import Path

import docker
from docker.errors import ImageNotFound

from terminal_rl.sandbox.config import BaseImagesConfig

RECIPE_LABEL = "terminal_rl.base_image.recipe"
_IMAGE_CHANGES = (
    'ENV PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"',
    "ENV PIP_BREAK_SYSTEM_PACKAGES=1",
    "ENV LANG=C.UTF-8",
    'CMD ["/bin/bash"]',
)


class BaseImageError(RuntimeError):
    """The base image could not be built; the message says which step failed and how."""


def recipe_hash(config: BaseImagesConfig) -> str:
    recipe = {"suite": config.suite, "packages": sorted(config.packages), "changes": _IMAGE_CHANGES}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def missing_aliases(client: docker.DockerClient, config: BaseImagesConfig) -> list[str]:
    """Aliases absent locally or built from another recipe."""
    wanted = recipe_hash(config)
    missing = []
    for alias in config.aliases:
        try:
            labels = client.images.get(alias).labels or {}
        except ImageNotFound:
            labels = {}
        if labels.get(RECIPE_LABEL) != wanted:
            missing.append(alias)
    return missing


def bootstrap_base_images(client: docker.DockerClient, config: BaseImagesConfig, scratch: Path,
                          force: bool = False) -> list[str]:
    """Build the base image when an alias is missing (or ``force``) and tag every alias.

    Returns:
        The aliases (re)tagged; empty when everything was already present.
    """
    todo = list(config.aliases) if force else missing_aliases(client, config)
    if not todo:
        return []
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch, prefix="rootfs-") as work:
        rootfs, tarball = Path(work) / "rootfs", Path(work) / "rootfs.tar"
        try:
            _debootstrap(config, rootfs)
        finally:
            # debootstrap mounts /proc and /sys inside the root filesystem; a failed run can leave them.
            subprocess.run(["umount", "-R", "-l", str(rootfs / "proc"), str(rootfs / "sys")], capture_output=True)
        _run(["tar", "--numeric-owner", "--one-file-system", "-C", str(rootfs), "-cf", str(tarball), "."],
             "pack the root filesystem")
        changes = [*_IMAGE_CHANGES, f"LABEL {RECIPE_LABEL}={recipe_hash(config)}"]
        with tarball.open("rb") as data:
            response = client.api.import_image(src=data, changes=changes)
    # The image id is the last status line's; podman ignores an import's tag, so tag afterwards.
    image = client.images.get(json.loads(response.strip().splitlines()[-1])["status"])
    for alias in todo:
        image.tag(*_split_tag(alias))
    return todo


def host_debian_mirror(sources_dir: Path = Path("/etc/apt")) -> str:
    """The first Debian mirror in this host's apt sources (deb822 ``URIs:`` or one-line ``deb``)."""
    files = sorted((sources_dir / "sources.list.d").glob("*.sources")) + [sources_dir / "sources.list"]
    for path in files:
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            words = line.split()
            if words[:1] == ["URIs:"] and len(words) > 1 and "security" not in words[1]:
                return words[1]
            if words[:1] == ["deb"] and len(words) > 2:
                uri = next(w for w in words[1:] if not w.startswith("["))
                if "security" not in uri:
                    return uri
    raise BaseImageError(f"no Debian mirror in {sources_dir}/sources.list(.d); set sandbox.base_images.mirror")


def _debootstrap(config: BaseImagesConfig, rootfs: Path) -> None:
    mirror = host_debian_mirror() if config.mirror == "auto" else config.mirror
    _run(["debootstrap", "--variant=minbase", f"--include={','.join(config.packages)}", config.suite,
          str(rootfs), mirror], f"debootstrap {config.suite} from {mirror}")
    # Keep images small: the package cache is rebuilt by any Dockerfile that runs apt-get update.
    for cached in (rootfs / "var/cache/apt/archives").glob("*.deb"):
        cached.unlink()


def _run(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-20:])
        raise BaseImageError(f"could not {what} (exit {result.returncode}):\n{tail}")


def _split_tag(reference: str) -> tuple[str, str]:
    repository, sep, tag = reference.rpartition(":")
    if not sep or "/" in tag:
        return reference, "latest"
    return repository, tag
