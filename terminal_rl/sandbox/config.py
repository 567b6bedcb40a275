"""Typed view of the ``sandbox`` config group (``conf/sandbox/``)."""

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
class SandboxConfig:
    docker_host: str
    base_images: BaseImagesConfig

    @classmethod
    def from_node(cls, node: DictConfig) -> SandboxConfig:
        base = to_dataclass(node.base_images, BaseImagesConfig)
        rest = {k: v for k, v in node.items() if k != "base_images"}
        return cls(base_images=base, **rest)
