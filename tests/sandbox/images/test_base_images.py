"""Offline base images: which recipe a FROM gets, what each recipe changes, and (against the real
engines) that the bootstrapped images behave as the real families do where Dockerfiles depend on it."""

from dataclasses import replace

import pytest

from terminal_rl.sandbox.images.base_images import (
    RECIPE_LABEL,
    _split_tag,
    common_hash,
    fix_for,
    host_debian_mirror,
    plan,
    recipe_dockerfile,
    recipe_for,
    recipe_hash,
)
from terminal_rl.sandbox.runtime.docker_client import docker_client
from terminal_rl.sandbox.runtime.sandbox import sandbox_ulimits


def test_host_mirror_from_deb822_and_one_line_sources(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.invalid/debian-security\n\nTypes: deb\nURIs: http://mirror.invalid/debian\n"
    )
    assert host_debian_mirror(tmp_path) == "http://mirror.invalid/debian"
    (tmp_path / "sources.list.d" / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text("# c\ndeb [arch=amd64] http://other.invalid/debian bookworm main\n")
    assert host_debian_mirror(tmp_path) == "http://other.invalid/debian"


def test_split_tag():
    assert _split_tag("ghcr.io/laude-institute/t-bench/python-3-13:20250620") == (
        "ghcr.io/laude-institute/t-bench/python-3-13",
        "20250620",
    )
    assert _split_tag("localhost:5000/img") == ("localhost:5000/img", "latest")
    assert _split_tag("ubuntu") == ("ubuntu", "latest")


@pytest.mark.parametrize(
    ("reference", "recipe"),
    [
        ("ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624", "ubuntu"),  # any date
        ("ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest", "ubuntu"),
        ("ghcr.io/laude-institute/t-bench/python-3-13:20250620", "python"),
        ("ubuntu:24.04", "ubuntu"),
        ("ubuntu:22.04", "ubuntu_legacy"),
        ("ubuntu:18.04", "ubuntu_legacy"),
        ("python:3.12-slim", "python"),
        ("debian:bookworm", "debian"),
        ("golang:1.21-alpine", None),
    ],
)
def test_every_from_gets_its_familys_recipe(sandbox_config, reference, recipe):
    assert recipe_for(reference, sandbox_config.base_images) == recipe


def test_recipes_change_only_what_the_family_differs_in(sandbox_config):
    base = sandbox_config.base_images
    ubuntu = recipe_dockerfile("common", base, "ubuntu")
    assert "RUN rm -f /usr/bin/python\n" in ubuntu and "EXTERNALLY-MANAGED" not in ubuntu
    python = recipe_dockerfile("common", base, "python")
    assert "useradd" in ubuntu and "useradd" not in python, "Ubuntu 23.04+ images ship a user `ubuntu`"
    assert "/usr/bin/python\n" not in python and "RUN rm -f /usr/lib/python3*/EXTERNALLY-MANAGED" in python
    assert recipe_hash(base, "ubuntu") != recipe_hash(base, "python")
    changed = replace(
        base, recipes={**base.recipes, "ubuntu": replace(base.recipes["ubuntu"], externally_managed=False)}
    )
    assert recipe_hash(changed, "ubuntu") != recipe_hash(base, "ubuntu") and common_hash(changed) == common_hash(base)
    assert common_hash(replace(base, packages=[*base.packages, "git"])) != common_hash(base)
    assert "docker load -i" in fix_for("golang:1.21-alpine") and 'match: "golang:*"' in fix_for("golang:1.21-alpine")


@pytest.mark.docker
@pytest.mark.both_engines
def test_bootstrapped_families_behave_like_the_real_images(sandbox_config):
    client = docker_client(sandbox_config.docker_host)
    ubuntu, python = (
        "ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest",
        "ghcr.io/laude-institute/t-bench/python-3-13:20250620",
    )
    assert plan(client, sandbox_config.base_images, [ubuntu, python]).provide == {}, "bootstrapped by start_services"
    assert client.images.get(ubuntu).labels[RECIPE_LABEL] == recipe_hash(sandbox_config.base_images, "ubuntu")

    def run(image, script):
        return (
            client.containers.run(
                image,
                ["bash", "-c", script],
                remove=True,
                network_disabled=True,
                ulimits=sandbox_ulimits(sandbox_config),
            )
            .decode()
            .splitlines()
        )

    probe = (
        "test -e /usr/bin/python && echo python || echo no-python; "
        "pip install --no-index six 2>&1 | grep -q externally-managed && echo managed || echo unmanaged; "
        "grep -h ^deb /etc/apt/sources.list | head -1; tmux -V; id -u ubuntu 2>/dev/null || echo no-user"
    )
    on_ubuntu, on_python = run(ubuntu, probe), run(python, probe)
    assert on_ubuntu[:2] == ["no-python", "managed"], "Dockerfiles `ln -s` python and need --break-system-packages"
    assert on_python[:2] == ["python", "unmanaged"], "python and system-wide pip installs, as the official images"
    assert on_ubuntu[2].startswith("deb http") and on_python[3].startswith("tmux ")
    assert on_ubuntu[4] == "1000" and on_python[4] == "no-user", "the real ubuntu:24.04 has user ubuntu, uid 1000"
