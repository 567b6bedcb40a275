"""Compose the project's Hydra configs outside a Hydra app and turn groups into typed objects.

Entry points that are not Hydra apps (sub-command CLIs such as ``python -m terminal_rl.tasks``)
use :func:`compose` so that every setting still comes from ``conf/`` and command-line overrides.
Relative paths in configs are relative to the project root (see :func:`project_path`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from omegaconf import DictConfig, ListConfig, OmegaConf

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = PROJECT_ROOT / "conf"

T = TypeVar("T")


def cpu_training_dtype() -> str:
    """``bf16`` where this CPU computes bf16 natively (AVX512-BF16 or AMX, as torch detects them), else
    ``fp32``: emulated bf16 matmuls (AVX2 only, most laptops) ran ~7x slower than fp32 here."""
    import torch

    return "bf16" if torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported() else "fp32"


def settings_digest(*values: Any) -> str:
    """8 hex digits naming a set of settings (config nodes included): the same settings, the same name."""
    plain = [OmegaConf.to_container(v, resolve=True) if isinstance(v, (DictConfig, ListConfig)) else v for v in values]
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()[:8]


# Arithmetic for configs that derive one setting from others (e.g. response length = context -
# prompt), a digest that names settings (a run id a rerun finds again), and the CPU's training
# dtype. Registered only in the driver: configs are resolved there before any worker sees them.
for _name, _fn in (
    ("tr.add", lambda a, b: a + b),
    ("tr.sub", lambda a, b: a - b),
    ("tr.mul", lambda a, b: a * b),
    ("tr.div", lambda a, b: a // b),
    ("tr.min", lambda a, b: min(a, b)),
    ("tr.eq", lambda a, b: a == b),
    ("tr.if", lambda condition, a, b: a if condition else b),
    ("tr.coalesce", lambda a, b: b if a is None else a),
    ("tr.digest", settings_digest),
    ("tr.cpu_dtype", cpu_training_dtype),
):
    if not OmegaConf.has_resolver(_name):
        OmegaConf.register_new_resolver(_name, _fn)


def compose(config_name: str, overrides: list[str] | tuple[str, ...] = ()) -> DictConfig:
    """Compose ``conf/<config_name>.yaml`` with Hydra overrides (e.g. ``task_set=tbrl``)."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return hydra_compose(config_name=config_name, overrides=list(overrides))


def project_path(path: str | Path) -> Path:
    """Resolve a config path: absolute paths stay, relative ones hang off the project root."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else (PROJECT_ROOT / path).resolve()


def nearest_existing(path: Path) -> Path:
    """``path`` or its closest existing parent: where a folder still to be made takes its disk space."""
    return next(p for p in (path, *path.parents) if p.exists())


def free_disk_bytes(path: Path) -> int:
    """Free space where ``path`` is, or will be once made."""
    return shutil.disk_usage(nearest_existing(path)).free


def model_location(path: str) -> str:
    """A model or tokenizer path from the config: the local folder when there is one, else the
    string as given (a Hugging Face Hub id such as ``Qwen/Qwen3-8B``)."""
    local = project_path(path)
    return str(local) if local.exists() else path


def to_dataclass(node: DictConfig | dict[str, Any], cls: type[T]) -> T:
    """Build dataclass ``cls`` from a config node, naming unknown or missing keys in the error."""
    data = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else dict(node)
    assert is_dataclass(cls)
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown config key(s) {unknown}; known keys: {sorted(known)}")
    try:
        return cls(**data)
    except TypeError as error:
        raise ValueError(f"{cls.__name__}: {error}") from error


def chosen_command(command: str, commands: tuple[str, ...]) -> str:
    """A Hydra app's subcommand (its ``command=`` key), or exit naming the choices."""
    if command not in commands:
        raise SystemExit(f"command={command!r} is not one of: {', '.join(commands)}")
    return command
