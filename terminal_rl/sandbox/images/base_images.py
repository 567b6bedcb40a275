"""Offline base images for every FROM a task set names: no registry is reachable (and many clusters'
compute nodes are air-gapped).

``debootstrap`` builds one Debian root filesystem from the host's package mirror (the *common* image,
``docker import``-ed). Each image family a Dockerfile may build FROM (t-bench's Ubuntu and Python
tags of any date, ``ubuntu:*``, ``python:*``, ``debian:*``) has a *recipe* that derives an image from
it mimicking what Dockerfiles of that family rely on (is there a ``/usr/bin/python``? does pip refuse
system-wide installs, as PEP 668 images do?), and a rule in config maps a FROM reference to its
recipe. ``bootstrap`` tags every missing reference of a task set with its recipe's image; a missing
reference no rule covers is reported with the exact fix. Images are labelled with a hash of their
recipe, so a changed recipe rebuilds, an unchanged one is reused, and an image of that name that is
not ours (loaded by the user, e.g. the real one) is never replaced.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import json
import subprocess
import tarfile
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import docker
from docker.errors import BuildError, ImageNotFound

from terminal_rl.sandbox.config import BaseImagesConfig

RECIPE_LABEL = "terminal_rl.base_image.recipe"
COMMON = "terminal-rl/base"
_COMMON_CHANGES = (
    'ENV PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"',
    "ENV LANG=C.UTF-8",
    'CMD ["/bin/bash"]',
)


class BaseImageError(RuntimeError):
    """The base image could not be built; the message says which step failed and how."""


@dataclass(frozen=True)
class BasePlan:
    """What a set of FROM references needs: reference -> recipe to provide, and references no rule
    covers (each with its fix). References present already (ours and current, or not ours) are in
    neither."""

    provide: dict[str, str]
    unmatched: dict[str, str]


def common_hash(config: BaseImagesConfig) -> str:
    recipe = {"suite": config.suite, "packages": sorted(config.packages), "changes": _COMMON_CHANGES}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def recipe_hash(config: BaseImagesConfig, recipe: str) -> str:
    settings = asdict(config.recipes[recipe])
    return hashlib.sha256(json.dumps([common_hash(config), recipe, settings], sort_keys=True).encode()).hexdigest()[:16]


def recipe_for(reference: str, config: BaseImagesConfig) -> str | None:
    """The recipe of the first family rule matching ``reference`` (fnmatch patterns), if any."""
    return next((rule["recipe"] for rule in config.families if fnmatch.fnmatchcase(reference, rule["match"])), None)


def fix_for(reference: str) -> str:
    return (
        f"FROM {reference}: no such image here and no sandbox.base_images.families rule covers it; load it "
        f"(`docker load -i <archive>.tar`, e.g. one `docker save {reference}` wrote elsewhere) or map it to a "
        f'recipe: `- {{match: "{reference.split(":")[0]}:*", recipe: debian}}` under sandbox.base_images.families'
    )


def plan(client: docker.DockerClient, config: BaseImagesConfig, references: list[str]) -> BasePlan:
    provide, unmatched = {}, {}
    for reference in sorted(set(references)):
        recipe = recipe_for(reference, config)
        try:
            labels = client.images.get(reference).labels or {}
        except ImageNotFound:
            labels = None
        if labels is not None and (
            RECIPE_LABEL not in labels or recipe is None or labels[RECIPE_LABEL] == recipe_hash(config, recipe)
        ):
            continue  # not ours (keep it), or ours and current
        if recipe is None:
            unmatched[reference] = fix_for(reference)
        else:
            provide[reference] = recipe
    return BasePlan(provide, unmatched)


def bootstrap_base_images(
    client: docker.DockerClient, config: BaseImagesConfig, references: list[str], scratch: Path
) -> tuple[list[str], dict[str, str]]:
    """Provide every reference of ``references`` that is missing (or ours from an older recipe).

    Returns:
        (the references (re)tagged, the references no rule covers -> their fix).
    """
    needs = plan(client, config, references)
    images: dict[str, str] = {}
    for reference, recipe in sorted(needs.provide.items()):
        if recipe not in images:
            images[recipe] = _recipe_image(client, config, recipe, scratch)
        client.images.get(images[recipe]).tag(*_split_tag(reference))
    return sorted(needs.provide), needs.unmatched


def common_tag(config: BaseImagesConfig) -> str:
    return f"{COMMON}:{common_hash(config)}"


def common_image(client: docker.DockerClient, config: BaseImagesConfig, scratch: Path) -> str:
    """The debootstrapped Debian image every recipe derives from (built when missing)."""
    tag = common_tag(config)
    try:
        client.images.get(tag)
        return tag
    except ImageNotFound:
        pass
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch, prefix="rootfs-") as work:
        rootfs, tarball = Path(work) / "rootfs", Path(work) / "rootfs.tar"
        try:
            _debootstrap(config, rootfs)
        finally:
            # debootstrap mounts /proc and /sys inside the root filesystem; a failed run can leave them.
            subprocess.run(["umount", "-R", "-l", str(rootfs / "proc"), str(rootfs / "sys")], capture_output=True)
        _run(
            ["tar", "--numeric-owner", "--one-file-system", "-C", str(rootfs), "-cf", str(tarball), "."],
            "pack the root filesystem",
        )
        with tarball.open("rb") as data:
            response = client.api.import_image(src=data, changes=list(_COMMON_CHANGES))
    # The image id is the last status line's; podman ignores an import's tag, so tag afterwards.
    image = client.images.get(json.loads(response.strip().splitlines()[-1])["status"])
    image.tag(*_split_tag(tag))
    return tag


def recipe_dockerfile(common: str, config: BaseImagesConfig, recipe: str) -> str:
    """The few lines that turn the common image into one family's (pure)."""
    settings = config.recipes[recipe]
    lines = [f"FROM {common}"]
    if not settings.python_alias:
        lines.append("RUN rm -f /usr/bin/python")
    if not settings.externally_managed:
        lines.append("RUN rm -f /usr/lib/python3*/EXTERNALLY-MANAGED")
    if settings.default_user:
        lines.append(f"RUN useradd --create-home --uid 1000 --user-group --shell /bin/bash {settings.default_user}")
    lines.append(f"LABEL {RECIPE_LABEL}={recipe_hash(config, recipe)}")
    return "\n".join(lines) + "\n"


def _recipe_image(client: docker.DockerClient, config: BaseImagesConfig, recipe: str, scratch: Path) -> str:
    tag = f"{COMMON}-{recipe.replace('_', '-')}:{recipe_hash(config, recipe)}"
    try:
        client.images.get(tag)
        return tag
    except ImageNotFound:
        pass
    dockerfile = recipe_dockerfile(common_image(client, config, scratch), config, recipe).encode()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as archive:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        archive.addfile(info, io.BytesIO(dockerfile))
    try:
        client.images.build(
            fileobj=io.BytesIO(context.getvalue()),
            custom_context=True,
            tag=tag,
            pull=False,
            rm=True,
            network_mode="none",
        )
    except BuildError as error:
        raise BaseImageError(f"could not derive the {recipe} base image: {error.msg}") from error
    return tag


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
    _run(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(config.packages)}",
            config.suite,
            str(rootfs),
            mirror,
        ],
        f"debootstrap {config.suite} from {mirror}",
    )
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
