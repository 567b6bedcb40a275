"""Masked groups add nothing to the loss, checked with verl's own policy loss and token normalisation:
the loss of a batch with a masked group, as our agent loop returns it (loss mask zeroed), equals the
loss of the batch without it; a mini-batch of masked groups only has a loss of 0, not NaN."""

import pytest
import torch

from terminal_rl.integrations.verl.losses import LOSS_MODE

pytestmark = pytest.mark.verl


def verl_pg_loss(log_prob, old_log_prob, advantages, loss_mask):
    """The policy-gradient loss as verl 0.9.1's FSDP engine computes it: the token count of the
    global mini-batch from its loss mask (transformer_impl.py l. 730-735), then the loss function
    selected by actor.policy_loss.loss_mode through verl's registry (losses.py l. 101-112)."""
    from verl.trainer.ppo.core_algos import get_policy_loss_fn
    from verl.workers.config import ActorConfig

    config = ActorConfig(
        strategy="fsdp2",
        ppo_mini_batch_size=2,
        ppo_micro_batch_size_per_gpu=1,
        rollout_n=1,
        policy_loss={"loss_mode": LOSS_MODE},
    )
    config.global_batch_info.update(
        dp_size=1, batch_num_tokens=int(loss_mask.sum()), global_batch_size=len(loss_mask), loss_scale_factor=None
    )
    loss, _ = get_policy_loss_fn(config.policy_loss["loss_mode"])(
        old_log_prob=old_log_prob,
        log_prob=log_prob,
        advantages=advantages,
        response_mask=loss_mask.bool(),
        loss_agg_mode="token-mean",
        config=config,
    )
    return loss


def batch(with_masked_group: bool, mask_zeroed: bool = True):
    torch.manual_seed(0)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]], dtype=torch.int64)  # one trained group of two
    advantages = torch.tensor([[0.7] * 4, [-0.7] * 4]) * mask
    if with_masked_group:  # a masked group: reward 0 for all, so advantage 0; its tokens zeroed or not
        masked = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 1]]) * (0 if mask_zeroed else 1)
        mask, advantages = torch.cat([mask, masked]), torch.cat([advantages, torch.zeros(2, 4)])
    old, noise = -torch.rand(4, 4)[: len(mask)], torch.randn(4, 4)[: len(mask)]  # same rows in both batches
    log_prob = (old + 0.05 * noise).requires_grad_(True)
    return log_prob, old, advantages, mask


def test_a_masked_group_changes_neither_the_loss_nor_the_gradient_of_the_others():
    alone = batch(with_masked_group=False)
    mixed = batch(with_masked_group=True)
    loss_alone, loss_mixed = verl_pg_loss(*alone), verl_pg_loss(*mixed)
    assert loss_mixed.item() == pytest.approx(loss_alone.item(), rel=1e-6)
    loss_alone.backward()
    loss_mixed.backward()
    assert torch.allclose(mixed[0].grad[:2], alone[0].grad), "the trained group's gradient is unchanged"
    assert torch.count_nonzero(mixed[0].grad[2:]) == 0
    # What an unzeroed mask did: the masked group's tokens inflate the token count.
    leaky = verl_pg_loss(*batch(with_masked_group=True, mask_zeroed=False))
    assert leaky.item() == pytest.approx(loss_alone.item() * 5 / 13, rel=1e-6)


def test_a_mini_batch_of_masked_groups_only_has_zero_loss_not_nan():
    log_prob, old, advantages, mask = batch(with_masked_group=True)
    loss = verl_pg_loss(log_prob[2:], old[2:], advantages[2:], mask[2:])
    assert loss.item() == 0.0 and not torch.isnan(loss)
    loss.backward()
    assert torch.isfinite(log_prob.grad).all()


def dr_grpo_loss(log_prob, old_log_prob, advantages, loss_mask, trajectories: int):
    """Dr.GRPO's loss as verl computes it for a mini-batch of ``trajectories`` x 1 rollout: verl sets
    ``global_batch_size`` to the mini-batch's rows (trainer_base.py l. 1829-1851)."""
    from verl.trainer.ppo.core_algos import get_policy_loss_fn
    from verl.workers.config import ActorConfig

    config = ActorConfig(
        strategy="fsdp2",
        ppo_mini_batch_size=trajectories,
        ppo_micro_batch_size_per_gpu=1,
        rollout_n=1,
        policy_loss={"loss_mode": LOSS_MODE},
    )
    config.global_batch_info.update(
        dp_size=1, batch_num_tokens=int(loss_mask.sum()), global_batch_size=len(loss_mask), loss_scale_factor=100
    )
    loss, _ = get_policy_loss_fn(LOSS_MODE)(
        old_log_prob=old_log_prob,
        log_prob=log_prob,
        advantages=advantages,
        response_mask=loss_mask.bool(),
        loss_agg_mode="seq-mean-token-sum-norm",
        config=config,
    )
    return loss


def test_dr_grpo_divides_by_trajectories_not_by_the_rows_per_turn_mode_makes():
    """Two trajectories, as append trains them (a row each) and as per_turn does (a row a turn: 3 + 1
    rows): one constant normaliser, so the same loss; verl's row count would give 2/4 of it."""
    torch.manual_seed(0)
    old = -torch.rand(2, 6)
    log_prob = old + 0.05 * torch.randn(2, 6)
    advantages = torch.tensor([[0.5] * 6, [-0.5] * 6])
    append = dr_grpo_loss(log_prob, old, advantages, torch.ones(2, 6, dtype=torch.int64), trajectories=2)
    # per_turn: trajectory 0's turns in rows of 2 tokens each, trajectory 1 in one row.
    rows = [(0, slice(0, 2)), (0, slice(2, 4)), (0, slice(4, 6)), (1, slice(0, 6))]
    mask = torch.zeros(4, 6, dtype=torch.int64)
    split = [torch.zeros(4, 6) for _ in range(3)]
    for row, (trajectory, span) in enumerate(rows):
        mask[row, span] = 1
        for tensor, source in zip(split, (log_prob, old, advantages)):
            tensor[row, span] = source[trajectory, span]
    per_turn = dr_grpo_loss(split[0], split[1], split[2], mask, trajectories=2)
    assert per_turn.item() == pytest.approx(append.item(), rel=1e-5)
    assert append.item() != 0.0
