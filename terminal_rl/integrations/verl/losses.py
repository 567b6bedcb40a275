"""The policy loss our presets train with: verl's own vanilla (clipped PPO) loss, registered under a
name of ours through verl's ``register_policy_loss`` so that a mini-batch with no loss token at all
(every group in it masked) cannot divide by zero.

verl's token-mean divides by the number of loss tokens in the global mini-batch
(``workers/engine/fsdp/transformer_impl.py`` l. 730-735; ``trainer/ppo/core_algos.py`` ``agg_loss``
l. 1170-1175): 0 tokens give 0/0 = NaN in the loss and its metrics. Counted as one token instead,
the loss is 0 and its gradient is zero. What this does not change: the optimizer still steps (Adam's
moments and weight decay move the weights a little), as verl does for any batch whose advantages are
all zero.

Dr.GRPO (``seq-mean-token-sum-norm``) divides the mini-batch's summed token losses by its row count
(verl passes the mini-batch's rows as ``global_batch_size``, ``trainer/ppo/v1/trainer_base.py``
l. 1829-1851) and ``loss_scale_factor``. With ``agent.history=per_turn`` a trajectory is one row a
turn and the trainer sizes mini-batches in rows, so that divisor would change with the turns a step
drew: it is pinned to the mini-batch's trajectories (the worker's configured ``ppo_mini_batch_size``
x ``rollout_n``, never resized), equal to its rows in append mode.
"""

from __future__ import annotations

from verl.trainer.ppo.core_algos import compute_policy_loss_vanilla, register_policy_loss

LOSS_MODE = "terminal_rl_vanilla"


@register_policy_loss(LOSS_MODE)
def vanilla_policy_loss(
    old_log_prob,
    log_prob,
    advantages,
    response_mask,
    loss_agg_mode: str = "token-mean",
    config=None,
    rollout_is_weights=None,
):
    """``compute_policy_loss_vanilla`` with at least one token in the mini-batch's token count.

    Shapes: every tensor is (batch, response_length); returns (scalar loss, metrics)."""
    info = config.global_batch_info if config is not None else {}
    if info.get("batch_num_tokens") == 0:
        info["batch_num_tokens"] = 1  # the same dict later serves the entropy and KL terms (losses.py l. 127-139)
    if config is not None and loss_agg_mode == "seq-mean-token-sum-norm":
        info["global_batch_size"] = config.ppo_mini_batch_size * config.rollout_n
    return compute_policy_loss_vanilla(
        old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights
    )
