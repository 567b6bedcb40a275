"""A training run after the door: the typed sections its set-up, launchers and node checks read.

The apps compose the config and check it whole (``terminal_rl/preflight/``); then ``train_job`` there
turns it into a ``TrainJob``, and nothing below the apps sees the composed config again, except verl:
``TrainJob.verl`` is the composed config as verl's trainer takes it (verl's contract: ``run_ppo``
reads it whole, and our code in verl's Ray workers reads its own sections from it there).
``integrations/verl`` hands it on to verl's functions and reads nothing else from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from terminal_rl.judge.service import JudgeConfig
from terminal_rl.run_context import RunContext
from terminal_rl.sandbox.config import SandboxConfig
from terminal_rl.tasks.task_set import TaskSetConfig


@dataclass(frozen=True)
class HardwareConfig:
    """Typed view of the ``hardware`` config group (``conf/hardware/``); comments on keys live there."""

    name: str
    nodes: int
    gpus_per_node: int
    gpu_memory_gb: float
    cpus_per_node: int
    min_free_disk_gb: float
    device: str
    rollout_backend: str
    attention: str
    remove_padding: bool
    ray_num_cpus: int
    ray_num_gpus: int
    agent_workers: int
    storage_units: int
    torch_compile: bool
    pin_memory: bool
    fsdp_size: int
    param_dtype: str
    env: dict[str, Any]


@dataclass(frozen=True)
class WarmStartPlan:
    """The SFT warm start a run asks for (``warm_start`` in the train config; ``training/warm_start.py``)."""

    settings: dict[str, Any]  # the warm_start section
    output_root: Path
    model_path: str  # the training run's model.path, which must be the warm start's model
    task_set: TaskSetConfig
    protocol: str  # agent.protocol the demonstrations are written in
    max_turns: int  # agent.max_turns: the check's episodes end where the run's validation's do
    enable_thinking: bool
    hardware_name: str
    param_dtype: str
    sft_lr: float  # model.sft_lr: the SFT's peak learning rate


@dataclass(frozen=True)
class CheckpointPlan:
    """The checkpoints a run keeps, and their size (preflight's estimate from the model preset)."""

    kept: int
    size_gb: float  # each (1e9 bytes)
    folder: Path  # trainer.default_local_dir
    line: str  # the plan, in a sentence


@dataclass(frozen=True)
class TrainJob:
    run: RunContext
    hardware: HardwareConfig
    sandbox: SandboxConfig
    task_set: TaskSetConfig
    # Raw sections whose readers take them as they are: the launcher (``launch/``), the model preset
    # (``models/tiny.py``), verl's data section (the curriculum schedule, batch sizes).
    launcher: DictConfig
    model: DictConfig
    data: DictConfig
    agent_loop_name: str
    curriculum_kind: str
    keep_list: str | None  # data_filter.keep_list
    max_refills: int  # data_filter.max_refills
    judge: JudgeConfig | None  # None: no stage of the run gives the judge a weight
    model_made_by_run: bool  # the tiny model or a warm start: made before any worker needs it
    warm_start: WarmStartPlan | None
    checkpoints: CheckpointPlan
    val_samples_per_row: int  # actor_rollout_ref.rollout.val_kwargs.n
    header_settings: dict[str, Any]  # the sections the console header shows
    loggers: list[str]  # trainer.logger
    wandb_mode: str
    verbose: bool
    verl: DictConfig
