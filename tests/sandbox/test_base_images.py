import pytest
from docker.types import Ulimit

from terminal_rl.sandbox.base_images import RECIPE_LABEL, host_debian_mirror, missing_aliases, recipe_hash, _split_tag
from terminal_rl.sandbox.docker_client import docker_client


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
        "ghcr.io/laude-institute/t-bench/python-3-13", "20250620")
    assert _split_tag("localhost:5000/img") == ("localhost:5000/img", "latest")
    assert _split_tag("ubuntu") == ("ubuntu", "latest")


def test_recipe_hash_changes_with_packages(sandbox_config):
    base = sandbox_config.base_images
    from dataclasses import replace

    assert recipe_hash(replace(base, packages=[*base.packages, "git"])) != recipe_hash(base)
    assert recipe_hash(replace(base, aliases=[])) == recipe_hash(base)


@pytest.mark.docker
@pytest.mark.both_engines
def test_bootstrapped_aliases_run_python_pytest_and_pip(sandbox_config):
    client = docker_client(sandbox_config.docker_host)
    assert missing_aliases(client, sandbox_config.base_images) == []
    for alias in sandbox_config.base_images.aliases:
        assert client.images.get(alias).labels[RECIPE_LABEL] == recipe_hash(sandbox_config.base_images)
    output = client.containers.run(
        sandbox_config.base_images.aliases[0],
        ["bash", "-c", "python -c 'print(6*7)' && python3 -m pytest --version && pip --version "
                       "&& echo $PIP_BREAK_SYSTEM_PACKAGES && tmux -V"],
        remove=True, network_disabled=True,
        ulimits=[Ulimit(name="nofile", soft=sandbox_config.container.nofile, hard=sandbox_config.container.nofile),
                 Ulimit(name="nproc", soft=sandbox_config.container.nproc, hard=sandbox_config.container.nproc)],
    ).decode()
    lines = output.splitlines()
    assert lines[0] == "42"
    assert lines[1].startswith("pytest ")
    assert lines[2].startswith("pip ")
    assert lines[3] == "1"
    assert lines[4].startswith("tmux ")
