"""The LoRA parameter count preflight uses, against peft's own count on a real Qwen3 model."""

import pytest

from terminal_rl.models.lora import trainable_parameters, unknown_modules

# Small, with every dimension different, so a swapped (in, out) or head count shows.
ARCHITECTURE = dict(
    layers=2,
    hidden_size=48,
    attention_heads=4,
    kv_heads=2,
    head_dim=16,
    intermediate_size=80,
    vocab_size=512,
    context_length=256,
)


@pytest.mark.parametrize(
    ("rank", "targets"),
    [
        (8, "all-linear"),
        (4, ["q_proj", "v_proj"]),
        (64, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
    ],
)
def test_the_count_equals_peft_on_a_qwen3_model(rank, targets):
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=512,
        hidden_size=48,
        intermediate_size=80,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=256,
    )
    model = get_peft_model(Qwen3ForCausalLM(config), LoraConfig(r=rank, lora_alpha=rank, target_modules=targets))
    trainable, _ = model.get_nb_trainable_parameters()
    assert trainable_parameters(ARCHITECTURE, rank, targets) == trainable


def test_misspelt_targets_are_named():
    assert unknown_modules(ARCHITECTURE, ["q_proj", "v_prj"]) == ["v_prj"]
    assert unknown_modules(ARCHITECTURE, "all-linear") == []
    assert trainable_parameters(ARCHITECTURE, 0, "all-linear") == 0
