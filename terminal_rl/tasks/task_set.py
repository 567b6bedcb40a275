"""The ``task_set`` config group: which source to load and how to split and export it."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any

from omegaconf import DictConfig

from terminal_rl.config import project_path, to_dataclass
from terminal_rl.tasks.loaders import LoadResult
from terminal_rl.tasks.loaders.harbor import load_harbor
from terminal_rl.tasks.loaders.tb1 import load_tb1
from terminal_rl.tasks.loaders.tbrl_csv import load_tbrl_csv
from terminal_rl.tasks.model import Difficulty, Limits


class SourceFormat(StrEnum):
    TBRL_CSV = "tbrl_csv"
    HARBOR = "harbor"
    TB1 = "tb1"
    PROCEDURAL = "procedural"


_LOADERS = {SourceFormat.TBRL_CSV: load_tbrl_csv, SourceFormat.HARBOR: load_harbor, SourceFormat.TB1: load_tb1}


@dataclass(frozen=True)
class TaskSetConfig:
    # Source format: tbrl_csv | harbor | tb1 | procedural.
    format: str
    # CSV file or task folder(s), relative to the project root; procedural: the family's name.
    path: str
    # verl's data_source column: names the task set in metrics.
    data_source: str
    # Share of each difficulty held out for validation, and the split's seed.
    val_fraction: float
    split_seed: int
    # Limits for tasks whose source does not set them.
    default_limits: dict[str, Any]
    # Keep only these difficulties / task ids (empty: all).
    difficulties: list[str] = field(default_factory=list)
    task_ids: list[str] = field(default_factory=list)
    # procedural only: count, seed, levels and exclude_seeds/_count/_levels of tasks/procedural.py.
    procedural: dict[str, Any] = field(default_factory=dict)
    # Validate on another source instead of val_fraction of this one (e.g. a held-out seed of a
    # procedural family): the keys that differ from this config (dict values merge). Empty: a split.
    validation: dict[str, Any] = field(default_factory=dict)

    @property
    def limits(self) -> Limits:
        return to_dataclass(self.default_limits, Limits)


def task_set_config(node: DictConfig) -> TaskSetConfig:
    config = to_dataclass(node, TaskSetConfig)
    known = [f.value for f in SourceFormat]
    if config.format not in known:
        raise ValueError(f"task_set.format={config.format!r} is not one of {known}")
    unknown = [d for d in config.difficulties if d not in {x.value for x in Difficulty}]
    if unknown:
        raise ValueError(f"task_set.difficulties has unknown values {unknown}; use {[d.value for d in Difficulty]}")
    return config


def validation_source(config: TaskSetConfig) -> TaskSetConfig | None:
    """The config of the separate validation source (``validation``), or None for a split."""
    if not config.validation:
        return None
    unknown = sorted(set(config.validation) - {f.name for f in fields(TaskSetConfig)})
    if unknown:
        raise ValueError(f"task_set.validation has unknown keys {unknown}")
    changed = {
        key: {**getattr(config, key), **value} if isinstance(value, dict) else value
        for key, value in config.validation.items()
    }
    return replace(config, **changed, validation={})


def validated_task_set(config: TaskSetConfig):
    """The configured source loaded and validated (``tasks/validation.py``): its ``ValidationReport``
    (valid tasks, and a problem for each rejected one, the loader's included)."""
    from terminal_rl.tasks.validation import validate_tasks

    loaded = load_task_set(config)
    return validate_tasks(loaded.tasks, loaded.problems)


def load_valid_tasks(config: TaskSetConfig) -> list:
    """The configured source's tasks that pass validation."""
    return validated_task_set(config).valid


def load_task_set(config: TaskSetConfig) -> LoadResult:
    """Load the configured source, keeping only the configured difficulties and task ids."""
    if config.format == SourceFormat.PROCEDURAL:
        from terminal_rl.tasks.procedural import procedural_tasks

        result = LoadResult(procedural_tasks(config.path, limits=config.limits, **config.procedural))
    else:
        result = _LOADERS[SourceFormat(config.format)](project_path(config.path), config.limits)
    if config.difficulties:
        result.tasks = [t for t in result.tasks if t.difficulty.value in config.difficulties]
    if config.task_ids:
        missing = sorted(set(config.task_ids) - {t.id for t in result.tasks})
        if missing:
            raise ValueError(f"task_set.task_ids {missing} are not in {config.path}")
        result.tasks = [t for t in result.tasks if t.id in set(config.task_ids)]
    return result
