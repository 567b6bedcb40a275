"""A per-GPU memory estimate for GRPO with FSDP (training) and vLLM (rollout) from architecture
figures alone, so preflight can reject a configuration that cannot fit before any job starts.

Deliberately simple, and on the safe side: bf16 weights and gradients, Adam in fp32 (master copy and
two moments: 12 bytes per parameter), all sharded over every GPU unless offloaded; one checkpointed
activation per layer; fp32 logits of one micro-batch split over the Ulysses group; rollout weights
split over tensor-parallel ranks plus the KV cache of one full-length sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30


@dataclass(frozen=True)
class MemoryEstimate:
    train_gb: float
    rollout_weights_gb: float
    rollout_kv_per_sequence_gb: float
    rollout_budget_gb: float

    @property
    def rollout_fits(self) -> bool:
        return self.rollout_weights_gb + self.rollout_kv_per_sequence_gb <= self.rollout_budget_gb


def estimate(architecture: dict, world_size: int, gpu_memory_gb: float, tensor_parallel: int, ulysses: int,
             micro_batch: int, context_tokens: int, gpu_memory_utilization: float, param_offload: bool,
             optimizer_offload: bool) -> MemoryEstimate:
    params = float(architecture["parameters"])
    weights = 0.0 if param_offload else params * 2 / world_size
    grads = params * 2 / world_size
    optimizer = 0.0 if optimizer_offload else params * 12 / world_size
    tokens = micro_batch * context_tokens / ulysses
    activations = architecture["layers"] * architecture["hidden_size"] * tokens * 2
    logits = tokens * architecture["vocab_size"] * 4
    kv_per_token = 2 * architecture["layers"] * architecture["kv_heads"] * architecture["head_dim"] * 2
    return MemoryEstimate(
        train_gb=(weights + grads + optimizer + activations + logits) / GIB,
        rollout_weights_gb=params * 2 / tensor_parallel / GIB,
        rollout_kv_per_sequence_gb=kv_per_token * context_tokens / tensor_parallel / GIB,
        rollout_budget_gb=gpu_memory_gb * gpu_memory_utilization,
    )
