"""A per-GPU memory estimate for GRPO with verl's FSDP actor and vLLM rollout in one hybrid engine,
from architecture figures alone, so preflight can reject a configuration that cannot fit before any
job starts. The byte counts follow verl 0.9.1 (paths in ``verl/``):

* the actor's sharded master weights are fp32 (``trainer/config/engine/fsdp.yaml`` ``model_dtype:
  fp32``), its sharded gradients fp32 (reduced in fp32, ``workers/engine/fsdp/transformer_impl.py``
  l. 396-399), AdamW keeps two fp32 moments (``optim/fsdp.yaml``): 16 bytes per parameter over the
  FSDP ranks, minus what ``param_offload`` / ``optimizer_offload`` move to the CPU; each wrapped
  layer is all-gathered in bf16 for compute (its parameters and gradients: 4 bytes per parameter);
* checkpointed activations: one bf16 hidden state per layer and token of a micro-batch, over the
  Ulysses group (sequence parallelism splits the tokens, l. 1228-1240);
* logits: bf16, tokens x vocabulary, over the Ulysses group. With flash-attn installed verl takes
  its cross-entropy kernel, whose backward writes the gradient into the logits (2 bytes per entry,
  ``utils/torch_functional.py`` l. 129); without it, the fp32 log-softmax is kept for backward and a
  bf16 gradient comes on top (8 bytes per entry);
* while vLLM generates, the actor's fp32 weights and Adam moments stay on the GPU unless offloaded
  (``workers/engine/base.py`` l. 314-335; gradients are freed after each update, l. 1135-1139),
  beside vLLM's ``gpu_memory_utilization`` share of the GPU, which must itself hold the bf16 weights
  split over tensor-parallel ranks and the KV cache of one full-length sequence.

Deliberately on the safe side: micro-batches counted at full length (no padding removed).
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30


@dataclass(frozen=True)
class MemoryEstimate:
    """GB per GPU."""

    train_gb: float
    # What the actor keeps on the GPU while vLLM runs, and vLLM's own share.
    rollout_actor_gb: float
    rollout_weights_gb: float
    rollout_kv_per_sequence_gb: float
    rollout_budget_gb: float
    gpu_memory_gb: float

    @property
    def rollout_fits(self) -> bool:
        """vLLM's share holds its weights and one sequence's KV cache."""
        return self.rollout_weights_gb + self.rollout_kv_per_sequence_gb <= self.rollout_budget_gb

    @property
    def rollout_gb(self) -> float:
        return self.rollout_actor_gb + self.rollout_budget_gb


def estimate(
    architecture: dict,
    world_size: int,
    gpu_memory_gb: float,
    tensor_parallel: int,
    ulysses: int,
    micro_batch: int,
    context_tokens: int,
    gpu_memory_utilization: float,
    param_offload: bool,
    optimizer_offload: bool,
    flash_attention: bool,
    trainable: float | None = None,
    fsdp_size: int = -1,
) -> MemoryEstimate:
    """``trainable``: parameters with gradients and optimizer states (None: all of them).
    ``fsdp_size``: GPUs one copy of the model is sharded over (verl's ``fsdp_size``; -1: all of them,
    else hybrid sharding, replicated across groups: ``engine/fsdp/utils.py: create_device_mesh``)."""
    params = float(architecture["parameters"])
    trained = params if trainable is None else float(trainable)
    shards = fsdp_size if 0 < fsdp_size < world_size else world_size
    weights = 0.0 if param_offload else params * 4 / shards
    grads = 0.0 if param_offload else trained * 4 / shards
    adam = 0.0 if optimizer_offload else trained * 8 / shards
    layer_gathered = params / architecture["layers"] * 4
    tokens = micro_batch * context_tokens / ulysses
    activations = architecture["layers"] * architecture["hidden_size"] * tokens * 2
    logits = tokens * architecture["vocab_size"] * (2 if flash_attention else 8)
    kv_per_token = 2 * architecture["layers"] * architecture["kv_heads"] * architecture["head_dim"] * 2
    return MemoryEstimate(
        train_gb=(weights + grads + adam + layer_gathered + activations + logits) / GIB,
        rollout_actor_gb=(weights + adam) / GIB,
        rollout_weights_gb=params * 2 / tensor_parallel / GIB,
        rollout_kv_per_sequence_gb=kv_per_token * context_tokens / tensor_parallel / GIB,
        rollout_budget_gb=gpu_memory_gb * gpu_memory_utilization,
        gpu_memory_gb=gpu_memory_gb,
    )
