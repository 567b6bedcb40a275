"""Model weights without the Hub at run time: ``model.path`` is a local (shared-filesystem) folder or
a Hugging Face Hub id already in the run's shared Hub cache (``run.hub_cache``). Every process of a
run (Ray workers and vLLM replicas included) runs offline against that cache (``offline_environment``),
so compute nodes without internet, or with a small home quota, never download; preflight refuses a
model it cannot find offline (``find_offline``) with the command that puts it there.
"""

from __future__ import annotations

import json
from pathlib import Path

from terminal_rl.config import project_path


def offline_environment(hub_cache: Path) -> dict[str, str]:
    """Variables for every process of the run: the Hub libraries read the shared cache, never the net."""
    return {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_CACHE": str(hub_cache)}


def find_offline(path: str, hub_cache: Path) -> Path | None:
    """The folder ``path`` names: itself when local, else the Hub id's snapshot in ``hub_cache``
    (None: not there). Never touches the network."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    local = project_path(path)
    if local.is_dir():
        return local
    try:
        return Path(snapshot_download(path, cache_dir=str(hub_cache), local_files_only=True))
    except (LocalEntryNotFoundError, HFValidationError, FileNotFoundError, ValueError):
        return None


def missing_weights(folder: Path) -> list[str]:
    """What a model folder lacks to load (an interrupted download): its config, and every weight shard
    its index names, or any weight file at all when there is no index (pure apart from reading)."""
    missing = [] if (folder / "config.json").is_file() else ["config.json"]
    for index_name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        index = folder / index_name
        if index.is_file():
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
            return missing + [shard for shard in shards if not (folder / shard).is_file()]
    if not any(folder.glob("*.safetensors")) and not any(folder.glob("pytorch_model*.bin")):
        missing.append("weights (*.safetensors)")
    return missing


def download_command(repo_id: str, hub_cache: Path) -> str:
    """What puts a Hub model into the shared cache, run once where the Hub is reachable (a login node)."""
    return f"hf download {repo_id} --cache-dir {hub_cache}"
