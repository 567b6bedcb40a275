"""Typed view of the ``sandbox`` config group (``conf/sandbox/``); comments on keys live there."""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import DictConfig

from terminal_rl.config import to_dataclass


@dataclass(frozen=True)
class BaseImagesConfig:
    suite: str
    mirror: str
    packages: list[str]
    aliases: list[str]


@dataclass(frozen=True)
class BuildConfig:
    inject_ca: bool | str
    ca_bundle: str
    forward_env: list[str]
    log_tail_lines: int
    cpuset_cpus: str
    archive_dir: str
    jobs: int


@dataclass(frozen=True)
class ContainerConfig:
    grace_sec: float
    cap_add: list[str]
    nofile: int
    nproc: int
    egress_network: str
    egress_interface: str


@dataclass(frozen=True)
class SessionConfig:
    default_timeout_sec: float
    output_head_bytes: int
    output_tail_bytes: int
    file_max_bytes: int
    terminal_width: int
    terminal_height: int


@dataclass(frozen=True)
class JanitorConfig:
    ttl_sec: float
    interval_sec: float


@dataclass(frozen=True)
class SandboxConfig:
    docker_host: str
    max_sandboxes: int
    docker_threads: int
    min_free_disk_gb: float
    base_images: BaseImagesConfig
    build: BuildConfig
    container: ContainerConfig
    session: SessionConfig
    janitor: JanitorConfig

    @classmethod
    def from_node(cls, node: DictConfig) -> SandboxConfig:
        groups = {"base_images": BaseImagesConfig, "build": BuildConfig, "container": ContainerConfig,
                  "session": SessionConfig, "janitor": JanitorConfig}
        values = {key: to_dataclass(node[key], kind) for key, kind in groups.items()}
        scalars = {key: node[key] for key in node if key not in groups}
        return to_dataclass({**scalars, **values}, cls)
