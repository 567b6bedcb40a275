"""DPO's per-sequence weights against the DPO loss itself (Rafailov et al. 2023, eq. 7), by autograd:
the weighted loss has its value and its gradient, however the episodes are split into sequences."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from terminal_rl.training.preference import preference_terms

BETA = 0.1


def dpo_loss(chosen, rejected, ref_chosen, ref_rejected):
    """The paper's loss, mean over pairs, from whole-episode log-probs."""
    return -F.logsigmoid(BETA * ((chosen - ref_chosen) - (rejected - ref_rejected))).mean()


def test_weighted_sequences_have_the_dpo_loss_value_and_gradient():
    torch.manual_seed(0)
    # Two pairs; pair 0's chosen episode is three per-turn sequences, its rejected one two; pair 1: one each.
    pair = torch.tensor([0, 0, 0, 0, 0, 1, 1])
    side = torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0])
    logp = (torch.randn(7, dtype=torch.float64) * 5 - 20).requires_grad_()
    ref = torch.randn(7, dtype=torch.float64) * 5 - 20

    def episodes(values):
        return (
            torch.stack([values[0:3].sum(), values[5]]),
            torch.stack([values[3:5].sum(), values[6]]),
        )

    expected = dpo_loss(*episodes(logp), *episodes(ref))
    expected.backward()
    terms = preference_terms(logp.detach(), ref, pair, side, BETA)
    current = logp.detach().clone().requires_grad_()
    surrogate = (-terms.weight * current + terms.offset).sum()
    surrogate.backward()
    assert surrogate.item() == pytest.approx(expected.item(), rel=1e-9)
    assert torch.allclose(current.grad, logp.grad, rtol=1e-9)
    h = [(c - rc) - (r - rr) for c, r, rc, rr in zip(*episodes(logp.detach()), *episodes(ref))]
    assert terms.margin == pytest.approx(float(BETA * sum(h) / 2))
    assert terms.accuracy == sum(float(x > 0) for x in h) / 2


def test_a_pair_missing_a_side_is_refused():
    with pytest.raises(ValueError, match="both its chosen and its rejected"):
        preference_terms(torch.zeros(2), torch.zeros(2), torch.tensor([0, 0]), torch.tensor([1.0, 1.0]), BETA)
