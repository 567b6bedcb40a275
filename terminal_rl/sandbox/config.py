"""Typed view of the ``sandbox`` config group (``conf/sandbox/``); comments on keys live there."""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import DictConfig, OmegaConf

from terminal_rl.config import to_dataclass


@dataclass(frozen=True)
class RecipeConfig:
    # Whether /usr/bin/python exists, and whether pip refuses system-wide installs (PEP 668).
    python_alias: bool
    externally_managed: bool
    # Non-root user the real image ships (uid 1000, own group), or "" for none.
    default_user: str = ""


@dataclass(frozen=True)
class BaseImagesConfig:
    suite: str
    mirror: str
    packages: list[str]
    recipes: dict[str, RecipeConfig]
    # {match: pattern, recipe: name}, first match wins.
    families: list[dict[str, str]]

    @classmethod
    def from_node(cls, node) -> BaseImagesConfig:
        data = dict(node)
        recipes = {name: to_dataclass(settings, RecipeConfig) for name, settings in data.pop("recipes").items()}
        config = to_dataclass({**data, "recipes": recipes}, cls)
        unknown = sorted({rule["recipe"] for rule in config.families} - set(recipes))
        if unknown:
            raise ValueError(
                f"sandbox.base_images.families name recipes {unknown} that sandbox.base_images.recipes "
                f"does not define (known: {sorted(recipes)})"
            )
        return config


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
class LeaseConfig:
    renew_sec: float
    stale_sec: float


@dataclass(frozen=True)
class JanitorConfig:
    ttl_sec: float
    interval_sec: float


@dataclass(frozen=True)
class SandboxConfig:
    docker_host: str
    max_sandboxes: int
    docker_threads: int
    base_images: BaseImagesConfig
    build: BuildConfig
    container: ContainerConfig
    session: SessionConfig
    lease: LeaseConfig
    janitor: JanitorConfig

    @classmethod
    def from_node(cls, node: DictConfig) -> SandboxConfig:
        groups = {
            "build": BuildConfig,
            "container": ContainerConfig,
            "session": SessionConfig,
            "lease": LeaseConfig,
            "janitor": JanitorConfig,
        }
        values = {key: to_dataclass(node[key], kind) for key, kind in groups.items()}
        values["base_images"] = BaseImagesConfig.from_node(OmegaConf.to_container(node["base_images"], resolve=True))
        scalars = {key: node[key] for key in node if key not in groups and key != "base_images"}
        return to_dataclass({**scalars, **values}, cls)
