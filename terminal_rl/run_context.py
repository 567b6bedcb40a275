"""The run context: one run id, the run's shared directory and this node's local directories.

Every part of a run finds its files here. The shared directory must be visible to all nodes (on a
cluster: a shared filesystem); it holds checkpoints, logs, the task store and judge control files.
Node-local directories hold what must not cross the network: the image cache, Docker data, scratch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

from terminal_rl.config import project_path, to_dataclass


@dataclass(frozen=True)
class RunConfig:
    """The ``run`` config group (``conf/run/``)."""

    # Identifies the run on every node; resume and requeue reuse it.
    id: str
    # Root under which each run gets ``<output_root>/<id>``; a shared filesystem on clusters.
    output_root: str
    # Root of this node's private directories; fast local disk, not shared.
    node_local_root: str
    # The Hub cache model weights are read from, offline (terminal_rl/models/hub.py); shared.
    hub_cache: str = ""


@dataclass(frozen=True)
class RunContext:
    """Directories of one run, derived from :class:`RunConfig`; nothing here touches the disk."""

    run_id: str
    shared_dir: Path
    node_local_dir: Path
    hub_cache: Path | None = None

    @classmethod
    def from_config(cls, run: RunConfig | DictConfig) -> RunContext:
        if isinstance(run, DictConfig):
            run = to_dataclass(run, RunConfig)
        if not run.id or "/" in run.id or run.id in {".", ".."}:
            raise ValueError(f"run.id={run.id!r} must be a non-empty name without '/'")
        return cls(
            run_id=run.id,
            shared_dir=project_path(run.output_root) / run.id,
            node_local_dir=project_path(run.node_local_root) / run.id,
            hub_cache=project_path(run.hub_cache) if run.hub_cache else None,
        )

    # Shared across nodes.
    @property
    def task_store_dir(self) -> Path:
        return self.shared_dir / "task_store"

    @property
    def data_dir(self) -> Path:
        """verl dataset files (parquet) exported for this run."""
        return self.shared_dir / "data"

    @property
    def checkpoint_dir(self) -> Path:
        return self.shared_dir / "checkpoints"

    @property
    def log_dir(self) -> Path:
        return self.shared_dir / "logs"

    @property
    def judge_control_dir(self) -> Path:
        return self.shared_dir / "judge"

    @property
    def image_report(self) -> Path:
        """Which task images built and why the others did not (``sandbox/images/build_report.py``)."""
        return self.shared_dir / "image_builds.json"

    # Private to this node.
    @property
    def image_cache_dir(self) -> Path:
        return self.node_local_dir / "image_cache"

    @property
    def image_lock_dir(self) -> Path:
        """One build lock (and failure record) per image hash, shared by the node's processes."""
        return self.image_cache_dir / "locks"

    @property
    def lease_dir(self) -> Path:
        """Sandbox leases of this run's processes on this node (``sandbox/lifecycle/lease.py``)."""
        return self.node_local_dir / "leases"

    @property
    def sandbox_slots_dir(self) -> Path:
        """The node's sandbox slots, shared by every process of this run on it (``sandbox/lifecycle/node_slots.py``)."""
        return self.node_local_dir / "sandbox_slots"

    @property
    def toolchain_root(self) -> Path:
        """The verifier's toolchain, built once per node and shared by every run (``sandbox/verify/toolchain.py``)."""
        return self.node_local_dir.parent / "toolchain"

    @property
    def docker_data_dir(self) -> Path:
        return self.node_local_dir / "docker"

    @property
    def scratch_dir(self) -> Path:
        return self.node_local_dir / "scratch"
