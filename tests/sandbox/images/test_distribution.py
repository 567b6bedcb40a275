"""Task images reach nodes that cannot build them: saved to a shared archive by one engine and loaded
by another (dockerd and podman stand in for two nodes), through the archive and the run's manifest."""

import io
import json
import tarfile
import uuid

import pytest

from terminal_rl.config import compose
from terminal_rl.launch.node_prep import prepare_node
from terminal_rl.preflight.job import train_job
from terminal_rl.sandbox.images.distribution import archive_path, fetch, present, publish, wait_for_manifest
from terminal_rl.sandbox.runtime.docker_client import docker_client
from tests.support import ENGINES

pytestmark = pytest.mark.docker


def engine_client(engine):
    return docker_client(compose("services", [f"sandbox={ENGINES[engine]}"]).sandbox.docker_host)


@pytest.fixture
def tiny_images():
    """Two real one-file images on dockerd (imported from a tarball: no registry, no build)."""
    client = engine_client("dockerd")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        data = b"hello from the archive\n"
        info = tarfile.TarInfo("hello.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    tags = {f"task-{i}": f"terminal-rl-test/tiny-{uuid.uuid4().hex[:8]}:v{i}" for i in range(2)}
    for tag in tags.values():
        repository, version = tag.split(":")
        client.api.import_image_from_data(buffer.getvalue(), repository=repository, tag=version)
    yield tags
    for engine in ENGINES:
        for tag in tags.values():
            try:
                engine_client(engine).api.remove_image(tag, force=True)
            except Exception:
                pass


def test_images_saved_by_one_engine_load_into_another(tiny_images, tmp_path):
    source, target = engine_client("dockerd"), engine_client("podman")
    assert sorted(publish(source, tiny_images, tmp_path, "run-a")) == sorted(tiny_images.values())
    assert all(archive_path(tmp_path, tag).stat().st_size > 0 for tag in tiny_images.values())
    assert publish(source, tiny_images, tmp_path, "run-b") == [], "archives are reused, never rewritten"
    assert wait_for_manifest(tmp_path, "run-a", timeout_sec=1) == tiny_images
    assert present(target, tiny_images.values()) == []
    assert sorted(fetch(target, tiny_images, tmp_path)) == sorted(tiny_images.values())
    assert sorted(present(target, tiny_images.values())) == sorted(tiny_images.values())
    assert fetch(target, tiny_images, tmp_path) == [], "nothing to load twice"
    assert list(tmp_path.glob("*.partial-*")) == []


def test_missing_archive_and_missing_manifest_are_named(tiny_images, tmp_path):
    with pytest.raises(FileNotFoundError, match="neither on this node nor archived"):
        fetch(engine_client("podman"), tiny_images, tmp_path)
    with pytest.raises(TimeoutError, match="manifest.run-x.json"):
        wait_for_manifest(tmp_path, "run-x", timeout_sec=0)


def test_rank_zero_builds_and_archives_the_task_set_and_another_node_loads_it(tmp_path):
    """prepare_node on two "nodes": rank 0 on dockerd builds the task's image and archives it, rank 1
    on podman (which lacks the image) loads it from the archive before step 1; and any build on a node
    (its first images, a rollout's) loads an archived image instead of building it. (The node-local
    root is the default one: its verifier toolchain is already built.)"""
    from terminal_rl.launch.node_prep import build_task_images
    from terminal_rl.sandbox.images.images import HASH_LABEL

    task = "base64-decode-secret-message"
    common = [
        "hardware=cpu",
        "model=tiny",
        "task_set=tbrl_smoke",
        f"task_set.task_ids=[{task}]",
        f"run.id=distribution-{uuid.uuid4().hex[:6]}",
        f"run.output_root={tmp_path / 'shared'}",
        f"sandbox.build.archive_dir={tmp_path / 'archive'}",
    ]
    prepare_node(train_job(compose("train", common + ["sandbox=docker"])), rank=0, image_timeout_sec=10)
    [manifest] = (tmp_path / "archive").glob("manifest.distribution-*.json")
    images = json.loads(manifest.read_text())
    assert list(images) == [task]
    podman = engine_client("podman")
    for tag in present(podman, images.values()):
        podman.api.remove_image(tag, force=True)
    prepare_node(train_job(compose("train", common + ["sandbox=podman"])), rank=1, image_timeout_sec=10)
    assert present(podman, images.values()) == list(images.values())
    build_hash = engine_client("dockerd").images.get(images[task]).labels[HASH_LABEL]
    for image in podman.images.list(filters={"label": f"{HASH_LABEL}={build_hash}"}):  # any task's with these inputs
        podman.api.remove_image(image.id, force=True)
    [outcome] = build_task_images(
        train_job(compose("train", common + ["sandbox=podman"])), tmp_path / "report.json", [task]
    )
    assert outcome.ok and outcome.cached and outcome.image.endswith(images[task]), "loaded from the archive, not built"
    assert present(podman, images.values()) == list(images.values())
