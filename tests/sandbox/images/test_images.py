"""Task images: content-hash cache, one build under concurrency, failures reported, CA injection."""

import asyncio
import json
import multiprocessing
import os
import secrets
from dataclasses import replace
from pathlib import Path

import pytest

from terminal_rl.sandbox.images.build_failures import classify, is_transient
from terminal_rl.sandbox.images.build_report import build_all, failed_tasks
from terminal_rl.sandbox.images.images import CA_FILE, ImageBuildError, TaskImages, build_inputs, ca_bundle, image_tag
from terminal_rl.sandbox.runtime.docker_client import AsyncDocker, docker_client
from terminal_rl.tasks.loaders.tbrl_csv import load_tbrl_csv
from terminal_rl.tasks.model import Environment
from tests.support import BASE_IMAGE


@pytest.fixture(scope="module")
def csv_task(tbrl_csv, default_limits):
    return next(t for t in load_tbrl_csv(tbrl_csv, default_limits).tasks if t.id == "csv-file-parsing-amount-sum")


def with_dockerfile(task, dockerfile: str):
    return replace(task, id=f"img-{secrets.token_hex(4)}", environment=Environment(dockerfile=dockerfile))


def test_ca_injection_goes_after_every_from_and_changes_the_hash(csv_task, sandbox_config, tmp_path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    build = replace(sandbox_config.build, ca_bundle=str(bundle), forward_env=["PIP_INDEX_URL"])
    task = with_dockerfile(csv_task, "FROM a AS one\nRUN true\nFROM \\\n  b\nCOPY --from=one /x /x\n")
    plain = build_inputs(task, build, environ={})
    injected = build_inputs(task, replace(build, inject_ca=True), environ={"PIP_INDEX_URL": "http://index.invalid/"})
    assert plain.context["Dockerfile"] == task.environment.dockerfile.encode()
    lines = injected.context["Dockerfile"].decode().splitlines()
    assert (
        lines.count("ARG PIP_INDEX_URL") == 2
        and lines.count(f"COPY {CA_FILE} /usr/local/share/terminal_rl/{CA_FILE}") == 2
    )
    assert lines[lines.index("FROM \\") + 2].startswith("COPY terminal_rl_ca.crt")  # after the continued FROM
    assert injected.context[CA_FILE] == bundle.read_bytes()
    assert injected.build_args == {"PIP_INDEX_URL": "http://index.invalid/"}
    assert injected.build_hash != plain.build_hash
    assert image_tag(task, plain).startswith(f"terminal-rl-task/{task.id}:")


def ensure_in_process(config, lock_dir: str, task, tag: bool = False):
    """Child process body: ask for the image; returns whether it was already there (or its tag)."""

    async def main():
        docker = AsyncDocker(docker_client(config.docker_host), 2)
        try:
            built = await TaskImages(docker, config.build, Path(lock_dir)).ensure(task)
            return built.image if tag else built.cached
        finally:
            docker.close()

    return asyncio.run(main())


@pytest.mark.docker
def test_real_task_builds_once_then_hits_the_cache(csv_task, sandbox_config, run_context):
    first = ensure_in_process(sandbox_config, str(run_context.image_cache_dir), csv_task)
    again = ensure_in_process(sandbox_config, str(run_context.image_cache_dir), csv_task)
    assert again is True
    image = docker_client().images.get(
        ensure_in_process(sandbox_config, str(run_context.image_cache_dir), csv_task, True)
    )
    assert image.labels["terminal_rl.task_id"] == csv_task.id
    assert first in (True, False)


@pytest.mark.docker
def test_tasks_with_the_same_build_inputs_share_one_image(csv_task, sandbox_config, tmp_path):
    dockerfile = f"FROM {BASE_IMAGE}\nRUN echo {secrets.token_hex(8)} > /marker\n"
    first, second = with_dockerfile(csv_task, dockerfile), with_dockerfile(csv_task, dockerfile)
    assert first.id != second.id
    assert ensure_in_process(sandbox_config, str(tmp_path), first) is False
    assert ensure_in_process(sandbox_config, str(tmp_path), second) is True, "the second task reused the first's image"
    tag = ensure_in_process(sandbox_config, str(tmp_path), second, True)
    assert tag == ensure_in_process(sandbox_config, str(tmp_path), first, True)
    docker_client(sandbox_config.docker_host).images.remove(tag, force=True)


@pytest.mark.docker
def test_one_instance_lists_images_once_per_hash_and_notices_a_removed_image(csv_task, sandbox_config, tmp_path):
    dockerfile = f"FROM {BASE_IMAGE}\nRUN echo {secrets.token_hex(8)} > /marker\n"
    tasks = [with_dockerfile(csv_task, dockerfile) for _ in range(3)]

    async def main():
        docker = AsyncDocker(docker_client(sandbox_config.docker_host), 2)
        listings = []
        listing = docker.api.images
        docker.api.images = lambda *a, **k: listings.append(k) or listing(*a, **k)
        try:
            images = TaskImages(docker, sandbox_config.build, tmp_path)
            first = await images.ensure(tasks[0])
            before = len(listings)
            rest = [await images.ensure(task) for task in tasks[1:]]
            assert len(listings) == before and all(b.cached and b.image == first.image for b in rest)
            docker.api.remove_image(first.image, force=True)  # as another process on the node might
            rebuilt = await images.ensure(tasks[1])
            assert not rebuilt.cached, "a removed image is built again, not taken from memory"
            await images.remove(rebuilt.image)
            return first
        finally:
            docker.close()

    assert not asyncio.run(main()).cached


@pytest.mark.docker
def test_two_processes_asking_at_once_build_once(csv_task, sandbox_config, tmp_path):
    task = with_dockerfile(csv_task, f"FROM {BASE_IMAGE}\nRUN sleep 2 && echo {secrets.token_hex(8)} > /marker\n")
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        cached = pool.starmap(ensure_in_process, [(sandbox_config, str(tmp_path), task)] * 2)
    assert sorted(cached) == [False, True], "exactly one of the two processes built the image"
    docker_client().images.remove(ensure_in_process(sandbox_config, str(tmp_path), task, True), force=True)


@pytest.mark.docker
def test_failed_builds_are_reported_by_cause_from_the_engines_own_log(csv_task, sandbox_config, tmp_path):
    """Each Dockerfile fails here for one cause, read from the engine's own log; a missing base image fails
    before the engine is asked (it would try its registry)."""
    failing = {
        "build step failed": f"FROM {BASE_IMAGE}\nRUN echo step-output-before-failure && exit 3\n",
        "missing base image": "FROM registry.invalid/nothing:1\n",
        "Dockerfile error": f"FROM {BASE_IMAGE}\nRUNN true\n",
        "package not found": f"FROM {BASE_IMAGE}\nRUN apt-get install -y terminal-rl-no-such-package\n",
        "base image differs from the real one": f"FROM {BASE_IMAGE}\nRUN ln -s /usr/bin/python3 /usr/bin/python\n",
    }
    tasks = {category: with_dockerfile(csv_task, dockerfile) for category, dockerfile in failing.items()}
    report = tmp_path / "image_builds.json"

    async def main():
        docker = AsyncDocker(docker_client(sandbox_config.docker_host), 2)
        try:
            return await build_all(TaskImages(docker, sandbox_config.build, tmp_path), list(tasks.values()), report, 2)
        finally:
            docker.close()

    outcomes = {o.task_id: o for o in asyncio.run(main())}
    assert {category: outcomes[task.id].category for category, task in tasks.items()} == {c: c for c in failing}
    other = outcomes[tasks["build step failed"].id]
    assert "returned a non-zero code: 3" in other.reason and "step-output-before-failure" in other.log_tail
    assert "registry.invalid/nothing:1 is not present locally" in outcomes[tasks["missing base image"].id].reason
    summary = json.loads(report.read_text())
    assert summary["failed"] == 5 and summary["failed_by_category"] == {c: 1 for c in failing}
    assert failed_tasks(report)[tasks["package not found"].id].startswith("package not found: ")
    # The node remembers the failures that come back every time (a missing base image fails before
    # any build); one that may pass (the network, a timeout, the engine) the next request builds again.
    remembered = {json.loads(path.read_text())["reason"] for path in tmp_path.glob("*.failed")}
    assert remembered == {
        outcomes[tasks[c].id].reason
        for c in ("Dockerfile error", "package not found", "base image differs from the real one", "build step failed")
    }
    assert classify("ConnectionError: Connection aborted.", "") == "other" and is_transient("other")


def test_a_new_attempt_builds_again_what_failed_for_a_reason_that_may_pass(tmp_path):
    from terminal_rl.sandbox.images.build_report import BuildOutcome, forget_transient_failures, write_report

    report = tmp_path / "image_builds.json"
    outcomes = [
        BuildOutcome("ok", True, False, 1.0, "img"),
        BuildOutcome("apt", False, False, 1.0, reason="x", category="package not found"),
        BuildOutcome("pip", False, False, 1.0, reason="y", category="network"),
        BuildOutcome("slow", False, False, 1.0, reason="z", category="timeout"),
    ]
    write_report(outcomes, 10, report)
    assert forget_transient_failures(report) == ["pip", "slow"]
    assert failed_tasks(report) == {"apt": "package not found: x"}
    summary = json.loads(report.read_text())
    assert summary["tasks"] == 10 and summary["attempted"] == 2
    assert forget_transient_failures(report) == [] and forget_transient_failures(tmp_path / "none.json") == []


def test_download_failures_read_as_network_or_timeout():
    """Messages as curl, apt, pip and wget print them when a build reaches for a site it cannot."""
    assert classify("returned a non-zero code: 6", "curl: (6) Could not resolve host: example.invalid") == "network"
    assert classify("non-zero code: 100", "Temporary failure resolving 'deb.debian.org'") == "network"
    assert classify("non-zero code: 1", "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed") == "network"
    assert classify("non-zero code: 1", "ReadTimeoutError: HTTPSConnectionPool: Read timed out.") == "timeout"
    assert classify("non-zero code: 4", "wget: unable to resolve host address 'x'") == "network"
    # Go's module proxy and Docker's own ADD <url> (from the shared CSV's build survey).
    assert (
        classify(
            "non-zero code: 1",
            'go: x@latest: Get "https://proxy.golang.org/x/@v/list": dial tcp: lookup '
            "proxy.golang.org on 10.0.0.53:53: no such host",
        )
        == "network"
    )
    assert (
        classify('ADD failed: Get "https://github.com/x.tar.gz": dial tcp: lookup github.com: no such host', "")
        == "network"
    )


@pytest.mark.docker
def test_auto_ca_injection_follows_the_host_bundle_variables(sandbox_config, tmp_path):
    bundle = tmp_path / "proxy-ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    auto = replace(sandbox_config.build, inject_ca="auto")
    assert ca_bundle(auto, {}) is None, "a host with no CA variables builds as is"
    assert ca_bundle(auto, {"PIP_CERT": str(tmp_path / "missing.pem"), "REQUESTS_CA_BUNDLE": str(bundle)}) == bundle
    with pytest.raises(ValueError, match="true, false or auto"):
        ca_bundle(replace(auto, inject_ca="sometimes"), {})


@pytest.mark.docker
def test_pip_install_at_build_needs_the_host_ca_behind_the_proxy(csv_task, sandbox_config, tmp_path):
    """Measured here: pip reaches the package index from a build only with the host's CA injected."""
    task = with_dockerfile(
        csv_task,
        f"FROM {BASE_IMAGE}\nRUN pip download --no-deps -d /tmp/wheels six==1.16.0 && echo {secrets.token_hex(8)}\n",
    )
    plain = replace(sandbox_config, build=replace(sandbox_config.build, inject_ca=False))
    with pytest.raises(ImageBuildError, match="non-zero code"):
        ensure_in_process(plain, str(tmp_path), task)
    with pytest.raises(ImageBuildError, match="non-zero code"):  # a failed build is not tried again
        ensure_in_process(plain, str(tmp_path), task)
    injected = replace(sandbox_config, build=replace(sandbox_config.build, inject_ca=True))
    assert ensure_in_process(injected, str(tmp_path), task) is False
    # On this host pip is pointed at a CA bundle of its own, so the default (auto) injects it too.
    assert ca_bundle(sandbox_config.build, dict(os.environ)) is not None
