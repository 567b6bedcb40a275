"""Task images for nodes that cannot build them (air-gapped compute nodes, or just to build once).

One node builds the run's task images and saves each into a shared archive directory
(``docker save``), then writes the run's manifest (task id -> image tag); every other node loads the
images it lacks (``docker load``) before step 1. Archives are named after the image tag, which is a
hash of the build's inputs, so later runs reuse them and an archive is never rewritten. Nodes must
share the build settings (CA bundle, forwarded build args) for their tags to agree.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path

import docker
from docker.errors import ImageNotFound


def archive_path(archive_dir: Path, tag: str) -> Path:
    return archive_dir / (tag.replace("/", "__").replace(":", "@") + ".tar")


def archives_tagged(archive_dir: Path, version: str) -> list[Path]:
    """The archives of images tagged ``<any name>:<version>`` (task images: the version is a hash of
    the build inputs, shared by every task built from the same inputs)."""
    return sorted(archive_dir.glob(f"*@{version}.tar"))


def manifest_path(archive_dir: Path, run_id: str) -> Path:
    return archive_dir / f"manifest.{run_id}.json"


def publish(client: docker.DockerClient, images: dict[str, str], archive_dir: Path, run_id: str) -> list[str]:
    """Save every image in ``images`` (task id -> tag) that is not archived yet, then write the run's
    manifest (last, atomically: it tells the other nodes the archive is complete). Returns the tags saved."""
    archive_dir.mkdir(parents=True, exist_ok=True)
    saved = []
    for tag in sorted(set(images.values())):
        path = archive_path(archive_dir, tag)
        if path.exists():
            continue
        _write_atomically(path, client.api.get_image(tag))
        saved.append(tag)
    _write_atomically(manifest_path(archive_dir, run_id), [json.dumps(images, indent=1, sort_keys=True).encode()])
    return saved


def wait_for_manifest(archive_dir: Path, run_id: str, timeout_sec: float) -> dict[str, str]:
    """The run's manifest once the publishing node has written it."""
    path = manifest_path(archive_dir, run_id)
    deadline = time.monotonic() + timeout_sec
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"no image manifest at {path} after {timeout_sec:.0f}s: did the first node fail to build?"
            )
        time.sleep(2)
    return json.loads(path.read_text())


def fetch(client: docker.DockerClient, images: dict[str, str], archive_dir: Path) -> list[str]:
    """Load the archived images this daemon lacks. Returns the tags loaded."""
    loaded = []
    for tag in sorted(set(images.values()) - set(present(client, images.values()))):
        path = archive_path(archive_dir, tag)
        if not path.exists():
            raise FileNotFoundError(f"image {tag} is neither on this node nor archived at {path}")
        load_archive(client, path)
        loaded.append(tag)
    return loaded


def load_archive(client: docker.DockerClient, path: Path) -> None:
    """``docker load`` of one archive (``docker save``'s tar), streamed from the file."""
    with path.open("rb") as archive:
        client.api.load_image(archive)


def present(client: docker.DockerClient, tags) -> list[str]:
    found = []
    for tag in tags:
        try:
            client.api.inspect_image(tag)
            found.append(tag)
        except ImageNotFound:
            pass
    return found


def _write_atomically(path: Path, chunks: Iterable[bytes]) -> None:
    """Readers on other nodes see the whole file or none of it."""
    partial = path.with_name(f"{path.name}.partial-{os.getpid()}")
    with partial.open("wb") as out:
        for chunk in chunks:
            out.write(chunk)
    partial.replace(path)
