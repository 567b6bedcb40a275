"""The memory estimate against verl's own references: configurations verl documents as running must
fit, and the components the estimate counts are verl's (fp32 master weights and gradients, two fp32
Adam moments, the actor resident beside vLLM during rollout)."""

import pytest

from terminal_rl.training.memory import GIB, estimate

QWEN3_8B = dict(
    layers=36, hidden_size=4096, attention_heads=32, kv_heads=8, head_dim=128, vocab_size=151936, parameters=8.19e9
)
QWEN2_7B = dict(
    layers=28, hidden_size=3584, attention_heads=28, kv_heads=4, head_dim=128, vocab_size=152064, parameters=7.6e9
)


@pytest.mark.parametrize(
    ("name", "architecture", "gpus", "settings"),
    [
        # verl docs/perf/device_tuning.rst, "7B MIN": examples/tuning/7b/qwen2-7b_grpo_2_h800_fsdp_vllm.sh
        # (2 x H800, TP 2, gpu_memory_utilization 0.6, micro batch 16, 1024 + 1024 tokens, actor offloaded).
        (
            "qwen2-7b_grpo_2_h800",
            QWEN2_7B,
            2,
            dict(
                tensor_parallel=2,
                micro_batch=16,
                context_tokens=2048,
                gpu_memory_utilization=0.6,
                param_offload=True,
                optimizer_offload=True,
            ),
        ),
        # verl examples/grpo_trainer/run_qwen3-8b.sh (8 GPUs, TP 2, 0.6, micro 32, 512 + 1024, no offload).
        (
            "run_qwen3-8b",
            QWEN3_8B,
            8,
            dict(
                tensor_parallel=2,
                micro_batch=32,
                context_tokens=1536,
                gpu_memory_utilization=0.6,
                param_offload=False,
                optimizer_offload=False,
            ),
        ),
    ],
)
def test_configurations_verl_runs_fit(name, architecture, gpus, settings):
    result = estimate(architecture, gpus, 80, ulysses=1, flash_attention=True, **settings)
    assert result.train_gb <= 80 and result.rollout_gb <= 80 and result.rollout_fits, (name, result)


def test_the_estimate_counts_verls_bytes_per_parameter():
    tiny_tokens = dict(layers=1, hidden_size=1, attention_heads=1, kv_heads=1, head_dim=1, vocab_size=1, parameters=8e9)
    full = estimate(
        tiny_tokens, 8, 80, 1, 1, 1, 1, 0.5, param_offload=False, optimizer_offload=False, flash_attention=True
    )
    # fp32 weights + fp32 gradients + two fp32 Adam moments over 8 ranks, plus one gathered bf16 layer.
    assert full.train_gb * GIB == pytest.approx(8e9 * 16 / 8 + 8e9 * 4, rel=1e-6)
    assert full.rollout_actor_gb * GIB == pytest.approx(8e9 * 12 / 8), "weights and Adam stay beside vLLM"
    offloaded = estimate(
        tiny_tokens, 8, 80, 1, 1, 1, 1, 0.5, param_offload=True, optimizer_offload=True, flash_attention=True
    )
    assert offloaded.rollout_actor_gb == 0.0


def test_hybrid_sharding_holds_a_node_sized_shard_per_gpu():
    """fsdp_size=8 on 32 GPUs: verl's mesh is (4 replicas, 8 shards) (create_device_mesh), so each GPU
    holds 1/8 of the weights, gradients and Adam moments, not 1/32; -1 or >= the world shards over all."""
    tiny_tokens = dict(layers=1, hidden_size=1, attention_heads=1, kv_heads=1, head_dim=1, vocab_size=1, parameters=8e9)
    args = (tiny_tokens, 32, 80, 1, 1, 1, 1, 0.5, False, False, True)
    hybrid, full, beyond = (estimate(*args, fsdp_size=size) for size in (8, -1, 64))
    assert hybrid.rollout_actor_gb * GIB == pytest.approx(8e9 * 12 / 8)
    assert full.rollout_actor_gb * GIB == pytest.approx(8e9 * 12 / 32) and beyond == full


def test_lora_keeps_fp32_base_weights_but_trains_only_the_adapter():
    tiny_tokens = dict(layers=1, hidden_size=1, attention_heads=1, kv_heads=1, head_dim=1, vocab_size=1, parameters=8e9)
    lora = estimate(
        tiny_tokens,
        8,
        80,
        1,
        1,
        1,
        1,
        0.5,
        param_offload=False,
        optimizer_offload=False,
        flash_attention=True,
        trainable=1e8,
    )
    # fp32 base weights, fp32 gradients and two Adam moments of the 1e8 adapter weights, one gathered layer.
    assert lora.train_gb * GIB == pytest.approx(8e9 * 4 / 8 + 1e8 * 12 / 8 + 8e9 * 4, rel=1e-6)
    assert lora.rollout_actor_gb * GIB == pytest.approx(8e9 * 4 / 8 + 1e8 * 8 / 8)


def test_without_flash_attention_the_logits_cost_four_times_as_much():
    args = (QWEN3_8B, 8, 80, 2, 1, 4, 8192, 0.6, False, False)
    flash, plain = estimate(*args, flash_attention=True), estimate(*args, flash_attention=False)
    logits = 4 * 8192 * QWEN3_8B["vocab_size"] / GIB
    assert plain.train_gb - flash.train_gb == pytest.approx(logits * 6)


def test_a_32b_model_on_two_gpus_without_offload_does_not_fit():
    qwen3_32b = dict(
        layers=64, hidden_size=5120, attention_heads=64, kv_heads=8, head_dim=128, vocab_size=151936, parameters=32.8e9
    )
    result = estimate(qwen3_32b, 2, 80, 2, 1, 1, 32768, 0.7, False, False, flash_attention=True)
    assert result.train_gb > 80 and result.rollout_gb > 80
