"""A verl checkpoint (FSDP shards) as one Hugging Face folder: verl's model merger writes the weights,
config and tokenizer; a LoRA checkpoint is then merged by peft, so the folder is a plain model.

verl's merger writes a LoRA checkpoint as the base weights plus ``lora_adapter/`` (peft's format:
``model_merger/base_model_merger.py`` l. 311-407); peft's ``merge_and_unload`` folds the adapter
into the weights (W + alpha/r * B A). The adapter stays beside the merged weights, for servers that
load adapters.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from verl.model_merger.base_model_merger import ModelMergerConfig
from verl.model_merger.fsdp_model_merger import FSDPModelMerger

ADAPTER_DIR = "lora_adapter"


def merge_checkpoint(
    checkpoint_dir: Path, target_dir: Path, upload_repo: str | None = None, private: bool = True
) -> None:
    """Write the full model (safetensors), its config and tokenizer to ``target_dir``; push it to the
    Hugging Face Hub repository ``upload_repo`` only when one is given. ``checkpoint_dir``: an RL
    checkpoint's ``actor`` folder or an SFT checkpoint's ``global_step_N`` (both hold
    ``fsdp_config.json`` and ``huggingface/``)."""
    if not (checkpoint_dir / "fsdp_config.json").is_file():
        raise FileNotFoundError(f"{checkpoint_dir} is not an FSDP checkpoint (no fsdp_config.json)")
    config = ModelMergerConfig(
        operation="merge",
        backend="fsdp",
        local_dir=str(checkpoint_dir),
        target_dir=str(target_dir),
        hf_upload_path=None,
        private=private,
        hf_model_config_path=str(checkpoint_dir / "huggingface"),
    )
    merger = FSDPModelMerger(config)
    merger.merge_and_save()
    if (target_dir / ADAPTER_DIR).is_dir():
        merge_adapter(target_dir)
    if upload_repo:
        merger.config.hf_upload_path = upload_repo
        merger.upload_to_huggingface()
    merger.cleanup()


def merge_adapter(folder: Path) -> None:
    """Fold ``folder/lora_adapter`` into the base model saved in ``folder``: merged in fp32, saved in
    the folder's dtype, written beside and then moved over the base weights."""
    import torch
    from peft import PeftModel
    from transformers import AutoConfig, AutoModelForCausalLM

    dtype = AutoConfig.from_pretrained(folder).dtype or torch.float32
    base = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    merged = PeftModel.from_pretrained(base, folder / ADAPTER_DIR).merge_and_unload().to(dtype)
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        merged.save_pretrained(scratch, safe_serialization=True)
        for old in folder.glob("model*.safetensors*"):
            old.unlink()
        for new in Path(scratch).iterdir():
            new.replace(folder / new.name)
