"""MT-GRPO through verl's own advantage path: ``compute_advantage`` with adv_estimator=mt_grpo finds our
estimator in verl's registry and mixes verl's GRPO outcome advantage with the turn advantages,
token by token, as worked out by hand."""

import math

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.verl


def run_verl_advantage(rewards, mask, uids, spans, turn_rewards, alpha=0.5, by_std=True):
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.trainer.ppo.ray_trainer import compute_advantage

    from terminal_rl.integrations.verl.advantages import MT_GRPO, BatchTurns, turns_for_batch
    from terminal_rl.rewards.turn_credit import TurnCredit

    token_rewards = torch.zeros(mask.shape)
    last = mask.shape[1] - 1 - torch.flip(mask, [1]).argmax(1)
    token_rewards[torch.arange(len(rewards)), last] = torch.tensor(rewards)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": token_rewards, "response_mask": mask},
        non_tensors={"uid": np.array(uids, dtype=object)},
    )
    credit = TurnCredit(
        alpha=alpha, gamma=0.95, w_outcome=0.7, w_exec=0.15, w_format=0.15, w_efficiency=0.05, epsilon=0.0
    )
    turns = BatchTurns(spans, turn_rewards, credit)
    config = OmegaConf.create({"norm_adv_by_std_in_grpo": by_std})
    with turns_for_batch(turns):
        out = compute_advantage(data, adv_estimator=MT_GRPO, config=config)
    return out.batch["advantages"], turns.metrics


def test_tokens_get_the_outcome_advantage_mixed_with_their_turns_advantage():
    # Two samples of one group, rewards 1 and 0: GRPO's outcome advantages +-1/sqrt(2) (std of
    # [1, 0] = 1/sqrt(2)). Sample 0 has turns at [0, 2) and [3, 5) (an observation token at 2),
    # sample 1 one turn at [0, 2). Turn rewards: position 0 [0.9, 0.3] -> +-1/sqrt(2); position 1
    # reached by sample 0 alone -> 0.
    mask = torch.tensor([[1, 1, 0, 1, 1], [1, 1, 0, 0, 0]])
    advantages, metrics = run_verl_advantage(
        [1.0, 0.0], mask, ["g", "g"], [[(0, 2), (3, 5)], [(0, 2)]], [[0.9, 1.2], [0.3]]
    )
    a = 1 / math.sqrt(2)
    expected = torch.tensor([[a, a, 0, 0.5 * a, 0.5 * a], [-a, -a, 0, 0, 0]])
    assert torch.allclose(advantages, expected, atol=1e-5)
    assert metrics["advantage/turn_0/mean"] == pytest.approx(0.0, abs=1e-6)
    assert metrics["advantage/turn_1/mean"] == pytest.approx(0.5 * a, abs=1e-5)
    assert metrics["advantage/turn_spread"] == pytest.approx((a - 0.5 * a) / 2, abs=1e-5)


def test_a_masked_row_gets_nothing_and_alpha_zero_is_verls_grpo():
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    mask = torch.tensor([[1, 1, 1], [1, 1, 0], [0, 0, 0]])
    advantages, _ = run_verl_advantage(
        [1.0, 0.0, 0.0], mask, ["g", "g", "h"], [[(0, 3)], [(0, 2)], [(0, 3)]], [[1.0], [0.0], [0.5]], alpha=0.0
    )
    rewards = torch.zeros(3, 3)
    rewards[0, 2], rewards[1, 1] = 1.0, 0.0
    grpo, _ = compute_grpo_outcome_advantage(rewards, mask, np.array(["g", "g", "h"], dtype=object), 0.0)
    assert torch.allclose(advantages, grpo) and advantages[2].abs().sum() == 0


def test_the_estimator_refuses_to_run_without_the_batch_turns():
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    import terminal_rl.integrations.verl.advantages  # noqa: F401 - registers mt_grpo

    with pytest.raises(RuntimeError, match="needs each row's turn spans"):
        get_adv_estimator_fn("mt_grpo")(
            token_level_rewards=torch.zeros(1, 2),
            response_mask=torch.ones(1, 2),
            index=np.array(["g"], dtype=object),
            config=None,
        )


def test_the_shuffled_control_is_verl_grpo_of_each_groups_rewards_in_another_order():
    """Through verl's compute_advantage and registry: each group's advantages are verl's GRPO
    advantages of a permutation of that group's rewards, spread over the response tokens."""
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage
    from verl.trainer.ppo.ray_trainer import compute_advantage

    from terminal_rl.integrations.verl.advantages import GRPO_SHUFFLED
    from terminal_rl.rewards.shuffle_control import shuffle_within_groups

    rewards = [1.0, 0.0, 0.3, 0.0, 1.0, 0.7, 0.2, 0.9]
    uids = ["a", "a", "a", "a", "b", "b", "b", "b"]
    mask = torch.ones(8, 4)
    mask[1, 3] = 0
    token_rewards = torch.zeros(8, 4)
    token_rewards[:, 2] = torch.tensor(rewards)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": token_rewards, "response_mask": mask},
        non_tensors={"uid": np.array(uids, dtype=object)},
    )
    out = compute_advantage(
        data, adv_estimator=GRPO_SHUFFLED, config=OmegaConf.create({"norm_adv_by_std_in_grpo": True})
    )
    shuffled = torch.zeros(8, 4)
    shuffled[:, 0] = torch.tensor(shuffle_within_groups(rewards, uids))
    expected, _ = compute_grpo_outcome_advantage(shuffled, mask, np.array(uids, dtype=object))
    assert torch.allclose(out.batch["advantages"], expected)
    assert out.batch["advantages"][1, 3] == 0  # masked token
    plain, _ = compute_grpo_outcome_advantage(token_rewards, mask, np.array(uids, dtype=object))
    assert not torch.allclose(out.batch["advantages"], plain)  # this draw is not the identity
    assert sorted(out.batch["advantages"][:4, 0].tolist()) == pytest.approx(sorted(plain[:4, 0].tolist()))


def test_negated_control_is_verls_grpo_of_the_negated_rewards():
    """algorithm=grpo_negated through verl's own compute_advantage: each row's GRPO advantage with its
    sign flipped (the rewards' order within a group reversed), masked tokens 0."""
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage
    from verl.trainer.ppo.ray_trainer import compute_advantage

    from terminal_rl.integrations.verl.advantages import GRPO_NEGATED

    uids = np.array(["a", "a", "a", "b", "b", "b"], dtype=object)
    mask = torch.ones(6, 3)
    mask[2, 2] = 0
    token_rewards = torch.zeros(6, 3)
    token_rewards[:, 1] = torch.tensor([1.0, 0.0, 0.4, 0.2, 0.2, 0.9])
    data = DataProto.from_dict(
        tensors={"token_level_rewards": token_rewards, "response_mask": mask}, non_tensors={"uid": uids}
    )
    out = compute_advantage(
        data, adv_estimator=GRPO_NEGATED, config=OmegaConf.create({"norm_adv_by_std_in_grpo": True})
    )
    plain, _ = compute_grpo_outcome_advantage(token_rewards, mask, uids)
    assert torch.allclose(out.batch["advantages"], -plain)
    assert out.batch["advantages"][0, 0] < 0 < out.batch["advantages"][1, 0], "the best response is pushed down"
    assert out.batch["advantages"][2, 2] == 0
