"""What a node's container engine needs before any sandbox starts there: the offline base images a
task set builds FROM (``base_images.py``) and the verifier's toolchain (``toolchain.py``). Both are
per engine, so every node of a cluster provides its own: ``sandbox command=bootstrap`` on one machine, and
each Slurm node while it is prepared (``launch/node_prep.py``). Already present, it takes seconds."""

from __future__ import annotations

from dataclasses import dataclass

import docker

from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.sandbox.images.base_images import bootstrap_base_images, common_image
from terminal_rl.sandbox.runtime.sandbox import sandbox_ulimits
from terminal_rl.sandbox.verify.toolchain import Toolchain, ensure_toolchain


@dataclass(frozen=True)
class NodeImages:
    # The FROM references tagged by this call, and those no recipe covers (reference -> the fix).
    provided: list[str]
    unmatched: dict[str, str]
    toolchain: Toolchain


def provide_node_images(
    client: docker.DockerClient, sandbox: SandboxConfig, references: list[str], run: RunContext
) -> NodeImages:
    """Provide what is missing; raises ``BaseImageError`` or ``ToolchainError`` naming the failed step."""
    provided, unmatched = bootstrap_base_images(client, sandbox.base_images, references, run.scratch_dir)
    common = common_image(client, sandbox.base_images, run.scratch_dir)
    toolchain = ensure_toolchain(client, common, run.toolchain_root, sandbox_ulimits(sandbox))
    return NodeImages(provided, unmatched, toolchain)
