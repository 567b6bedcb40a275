"""A trained actor checkpoint (FSDP shards) merged into a Hugging Face folder by verl's model merger."""

from __future__ import annotations

from pathlib import Path

from verl.model_merger.base_model_merger import ModelMergerConfig
from verl.model_merger.fsdp_model_merger import FSDPModelMerger


def merge_checkpoint(actor_dir: Path, target_dir: Path, upload_repo: str | None = None, private: bool = True) -> None:
    """Write the full model (safetensors), its config and tokenizer to ``target_dir``; push it to the
    Hugging Face Hub repository ``upload_repo`` only when one is given."""
    if not (actor_dir / "fsdp_config.json").is_file():
        raise FileNotFoundError(f"{actor_dir} is not an FSDP actor checkpoint (no fsdp_config.json)")
    config = ModelMergerConfig(operation="merge", backend="fsdp", local_dir=str(actor_dir),
                               target_dir=str(target_dir), hf_upload_path=upload_repo, private=private,
                               hf_model_config_path=str(actor_dir / "huggingface"))
    merger = FSDPModelMerger(config)
    merger.merge_and_save()
    merger.cleanup()
