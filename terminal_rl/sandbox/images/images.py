"""Task images: built once per content hash, reused by every rollout and epoch.

An image is found by a hash of everything that goes into the build (Dockerfile, build context,
injected CA bundle, forwarded settings, and the base images it builds FROM: their recipe when they
are ours, the same on every node, else their image id), kept as a label: an unchanged task is a cache
hit, a changed one (or one whose base image changed) rebuilds, and tasks with the same build inputs
share one image (a procedural family's thousands of tasks, whose own files enter at start, cost one
build). A file lock per hash on the node-local image cache makes concurrent requests (threads, or the
several rollout-worker processes sharing one daemon) build it once; the others wait and reuse.
A build that failed the way it fails every time (a Dockerfile error, a missing package: see
``build_failures.py``) is not tried again by this node's later requests: its failure is kept beside
the lock (delete ``<hash>.failed`` in the image cache to retry). One that may pass on another try (the
network, a timeout, the engine) is not kept: the next request builds again.

With ``build.archive_dir`` set, an image archived there (by another node, or a CPU job's ``images
build``: ``distribution.py``) is loaded instead of built. Builds never pull: a task whose base image is not
present locally fails before the engine is asked (the engine would try its registry); base images come from
``base_images.py``. Behind a TLS-intercepting proxy, ``build.inject_ca`` copies the host's CA bundle
into every stage and points pip, requests, curl and apt at it; ``auto`` does so exactly when the host
itself points pip/requests/SSL at a bundle of its own (``CA_VARIABLES``), as such proxies require.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import re
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from docker.errors import APIError, BuildError, ImageNotFound

from terminal_rl.config import project_path
from terminal_rl.sandbox.config import BuildConfig
from terminal_rl.sandbox.images.base_images import RECIPE_LABEL
from terminal_rl.sandbox.images.build_failures import classify, is_transient
from terminal_rl.sandbox.images.distribution import archives_tagged, load_archive
from terminal_rl.sandbox.runtime.docker_client import AsyncDocker
from terminal_rl.sandbox.runtime.output import sanitize
from terminal_rl.tasks.dockerfile import base_images
from terminal_rl.tasks.model import Task

TASK_LABEL = "terminal_rl.task_id"
HASH_LABEL = "terminal_rl.build_hash"
ABSENT = "absent"  # a base image not present locally
TAG_HASH_CHARS = 20  # a task image's tag is the start of its build hash
CA_FILE = "terminal_rl_ca.crt"
APT_CA_FILE = "terminal_rl_apt_ca.conf"
_CA_PATH = f"/usr/local/share/terminal_rl/{CA_FILE}"
_CA_LINES = (
    f"COPY {CA_FILE} {_CA_PATH}\n"
    f"COPY {APT_CA_FILE} /etc/apt/apt.conf.d/99terminal-rl-ca\n"
    f"ENV PIP_CERT={_CA_PATH} REQUESTS_CA_BUNDLE={_CA_PATH} SSL_CERT_FILE={_CA_PATH} CURL_CA_BUNDLE={_CA_PATH}\n"
)
_FROM = re.compile(r"^\s*FROM\s", re.IGNORECASE)
# Host variables that name a CA bundle for pip, requests, OpenSSL and curl (inject_ca=auto).
CA_VARIABLES = ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE")


class ImageBuildError(RuntimeError):
    """A task image did not build; ``log_tail`` holds the end of the build log."""

    def __init__(self, task_id: str, reason: str, log_tail: str):
        super().__init__(f"task {task_id!r}: image build failed: {reason}\n{log_tail}")
        self.task_id = task_id
        self.reason = reason
        self.log_tail = log_tail


@dataclass(frozen=True)
class BuiltImage:
    image: str
    # True when the image already existed (no build ran in this call).
    cached: bool
    duration_sec: float


@dataclass(frozen=True)
class BuildInputs:
    """Everything that goes into one build: the build context (Dockerfile included) and build args."""

    context: dict[str, bytes]
    build_args: dict[str, str]
    # FROM reference -> what identifies that base image (see the module docstring).
    bases: dict[str, str] = field(default_factory=dict)

    @property
    def build_hash(self) -> str:
        digest = hashlib.sha256()
        for path in sorted(self.context):
            digest.update(path.encode() + b"\0" + hashlib.sha256(self.context[path]).digest())
        digest.update(json.dumps(self.build_args, sort_keys=True).encode())
        if self.bases:
            digest.update(json.dumps(self.bases, sort_keys=True).encode())
        return digest.hexdigest()

    def tarball(self) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            for path, data in sorted(self.context.items()):
                info = tarfile.TarInfo(path)
                info.size, info.mode, info.mtime = len(data), 0o755 if path.endswith(".sh") else 0o644, 0
                archive.addfile(info, io.BytesIO(data))
        return buffer.getvalue()


def build_inputs(
    task: Task, config: BuildConfig, environ: dict[str, str] | None = None, bases: dict[str, str] | None = None
) -> BuildInputs:
    """The build context and args for ``task`` under ``config`` (pure apart from reading the CA file)."""
    environ = os.environ if environ is None else environ
    dockerfile = task.environment.dockerfile
    if dockerfile is None:
        raise ValueError(f"task {task.id!r} names an image, it has no Dockerfile to build")
    context = dict(task.environment.build_context)
    build_args = {name: environ[name] for name in config.forward_env if environ.get(name)}
    bundle = ca_bundle(config, environ)
    if bundle is not None:
        context[CA_FILE] = bundle.read_bytes()
        context[APT_CA_FILE] = f'Acquire::https::CAInfo "{_CA_PATH}";\n'.encode()
    context["Dockerfile"] = _with_build_settings(dockerfile, bundle is not None, sorted(build_args)).encode()
    return BuildInputs(context, build_args, dict(bases or {}))


def ca_bundle(config: BuildConfig, environ: dict[str, str]) -> Path | None:
    """The CA bundle to inject into builds, or None (``build.inject_ca``: true, false or auto)."""
    if config.inject_ca == "auto":
        named = [Path(environ[name]) for name in CA_VARIABLES if environ.get(name)]
        return next((path for path in named if path.is_file()), None)
    if config.inject_ca not in (True, False):
        raise ValueError(f"sandbox.build.inject_ca={config.inject_ca!r} must be true, false or auto")
    if not config.inject_ca:
        return None
    bundle = project_path(config.ca_bundle)
    if not bundle.is_file():
        raise FileNotFoundError(f"sandbox.build.ca_bundle={config.ca_bundle} does not exist")
    return bundle


def image_tag(task: Task, inputs: BuildInputs) -> str:
    name = re.sub(r"[^a-z0-9_.-]", "-", task.id.lower()).strip(".-") or "task"
    return f"terminal-rl-task/{name}:{inputs.build_hash[:TAG_HASH_CHARS]}"


class TaskImages:
    """Builds task images through one daemon, once per build hash. Remembers the image it found or
    built for each hash, so a family's thousands of tasks sharing one image list the engine's images
    once (~0.3 s on a daemon holding a few hundred); later requests only inspect that image (still
    there, or found or built again)."""

    def __init__(self, docker: AsyncDocker, config: BuildConfig, lock_dir: Path):
        self._docker = docker
        self._config = config
        self._lock_dir = lock_dir
        self._known: dict[str, str] = {}  # build hash -> tag

    async def ensure(self, task: Task) -> BuiltImage:
        """The task's image, built if it does not exist yet. Never pulls."""
        started = time.monotonic()
        if task.environment.image is not None:
            if not await self._exists(task.environment.image):
                raise ImageBuildError(
                    task.id,
                    f"image {task.environment.image} is not present locally "
                    "(no registry is used; load or build it first)",
                    "",
                )
            return BuiltImage(task.environment.image, True, time.monotonic() - started)
        inputs = build_inputs(task, self._config, bases=await self._bases(task.environment.dockerfile))
        absent = [reference for reference, identity in inputs.bases.items() if identity == ABSENT]
        if absent:  # the engine would try a registry: fail here, before any traffic
            raise ImageBuildError(
                task.id,
                f"base image {', '.join(absent)} is not present locally (builds never "
                "pull; `python -m terminal_rl.sandbox command=bootstrap` provides the "
                "ones a recipe covers, `python -m terminal_rl.tasks` names the fix for the others)",
                "",
            )
        existing = self._known.get(inputs.build_hash)
        if not (existing and await self._exists(existing)):
            existing = await self._docker.call(self._image_with_hash, inputs.build_hash)
        if existing:
            self._known[inputs.build_hash] = existing
            return BuiltImage(existing, True, time.monotonic() - started)
        tag, built = await self._docker.call(self._build_locked, task, inputs, image_tag(task, inputs))
        self._known[inputs.build_hash] = tag
        return BuiltImage(tag, not built, time.monotonic() - started)

    async def remove(self, image: str) -> None:
        await self._docker.call(self._docker.api.remove_image, image, force=True)

    async def _bases(self, dockerfile: str) -> dict[str, str]:
        """Each FROM image's identity: our recipe hash (the same on every node), else its id."""
        bases = {}
        for reference in base_images(dockerfile):
            if reference == "scratch" or "$" in reference:  # no image, or one only the build args name
                continue
            try:
                attrs = await self._docker.call(self._docker.api.inspect_image, reference)
            except ImageNotFound:
                bases[reference] = ABSENT
                continue
            labels = (attrs.get("Config") or {}).get("Labels") or {}
            bases[reference] = labels.get(RECIPE_LABEL) or attrs["Id"]
        return bases

    def _image_with_hash(self, build_hash: str) -> str | None:
        """A tag of the image built from these inputs for any task, if one exists."""
        for image in self._docker.api.images(filters={"label": f"{HASH_LABEL}={build_hash}"}):
            if image.get("RepoTags"):
                return image["RepoTags"][0]
        return None

    async def _exists(self, image: str) -> bool:
        try:
            await self._docker.call(self._docker.api.inspect_image, image)
            return True
        except ImageNotFound:
            return False

    def _build_locked(self, task: Task, inputs: BuildInputs, tag: str) -> tuple[str, bool]:
        """Build under the per-hash file lock (blocking; runs on the Docker thread pool) unless another
        holder of the lock did meanwhile. Returns the image's tag and whether this call built it."""
        self._lock_dir.mkdir(parents=True, exist_ok=True)
        failure = self._lock_dir / f"{inputs.build_hash}.failed"
        with open(self._lock_dir / f"{inputs.build_hash}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            existing = self._image_with_hash(inputs.build_hash)
            if existing:
                return existing, False
            archived = self._load_archived(inputs.build_hash)
            if archived:
                return archived, False
            if failure.is_file():
                recorded = json.loads(failure.read_text(encoding="utf-8"))
                raise ImageBuildError(task.id, recorded["reason"], recorded["log_tail"])
            try:
                self._build(task, inputs, tag)
            except ImageBuildError as error:
                if not is_transient(classify(error.reason, error.log_tail)):
                    failure.write_text(
                        json.dumps({"reason": error.reason, "log_tail": error.log_tail}), encoding="utf-8"
                    )
                raise
            return tag, True

    def _load_archived(self, build_hash: str) -> str | None:
        """An image of these build inputs that another node (or a CPU job) archived in
        ``build.archive_dir``, loaded into this engine; its tag, or None when none is archived."""
        if not self._config.archive_dir:
            return None
        for archived in archives_tagged(project_path(self._config.archive_dir), build_hash[:TAG_HASH_CHARS]):
            load_archive(self._docker.client, archived)
            return self._image_with_hash(build_hash)
        return None

    def _build(self, task: Task, inputs: BuildInputs, tag: str) -> None:
        streamed: list[str] = []
        try:
            stream = self._docker.api.build(
                fileobj=io.BytesIO(inputs.tarball()),
                custom_context=True,
                tag=tag,
                rm=True,
                forcerm=True,
                pull=False,
                decode=True,
                buildargs=inputs.build_args or None,
                labels={TASK_LABEL: task.id, HASH_LABEL: inputs.build_hash},
                timeout=int(task.limits.build_timeout_sec),
                container_limits={"cpusetcpus": self._config.cpuset_cpus} if self._config.cpuset_cpus else None,
            )
            error_message = ""
            # Drain the whole stream even after an error: the daemon removes the failed step's
            # container (forcerm) only when the build ends normally, not when we hang up.
            for chunk in stream:
                streamed.append(chunk.get("stream", ""))
                error_message = error_message or chunk.get("error", "")
            if error_message:
                raise BuildError(error_message, streamed)
        except (BuildError, APIError) as error:
            reason = getattr(error, "msg", None) or getattr(error, "explanation", None) or str(error)
            raise ImageBuildError(task.id, str(reason).strip(), self._tail(streamed)) from error
        except Exception as error:  # a timeout or a broken connection mid-build
            raise ImageBuildError(task.id, f"{type(error).__name__}: {error}", self._tail(streamed)) from error

    def _tail(self, streamed: list[str]) -> str:
        """The last lines of the build log: chunks joined first (Docker splits lines across them)."""
        lines = sanitize("".join(streamed).encode()).splitlines()
        return "\n".join(lines[-self._config.log_tail_lines :])


def _with_build_settings(dockerfile: str, inject_ca: bool, build_args: list[str]) -> str:
    """Insert the CA lines and ``ARG`` declarations after every FROM line (each stage needs them)."""
    additions = (_CA_LINES if inject_ca else "") + "".join(f"ARG {name}\n" for name in build_args)
    if not additions:
        return dockerfile
    lines = []
    continued = in_from = False
    for line in dockerfile.splitlines(keepends=True):
        lines.append(line if line.endswith("\n") else line + "\n")
        in_from = in_from or (not continued and bool(_FROM.match(line)))
        continued = line.rstrip().endswith("\\")
        if in_from and not continued:
            lines.append(additions)
            in_from = False
    return "".join(lines)
