"""DPO as per-sequence weights (pure torch): the loss of Rafailov et al. (2023),
``-log sigmoid(beta * ((pi_c - ref_c) - (pi_r - ref_r)))`` per pair, where ``pi`` and ``ref`` are an
episode's summed log-probabilities of its own tokens under the policy and the frozen reference.

An episode may be several sequences (``agent.history=per_turn``: one per turn), and a trainer may split
a batch into micro-batches anywhere, so the loss is not computed on pairs inside a micro-batch.
Instead the pair terms come from a no-grad pass over the whole batch, and each sequence gets a weight
and an offset: ``loss_seq = -weight * logp_seq + offset``. Summed over a batch it has the DPO loss's
value and, since ``d loss / d pi_c = -beta * sigmoid(-beta * h)`` (h the pair's reward margin), its
gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class PreferenceTerms:
    """Per sequence of a batch: ``weight`` and ``offset`` of its loss; per batch: the mean reward margin
    ``beta * h`` and the share of pairs ranked right (h > 0)."""

    weight: torch.Tensor  # [sequences]
    offset: torch.Tensor  # [sequences]
    margin: float
    accuracy: float


def preference_terms(
    logp: torch.Tensor, ref_logp: torch.Tensor, pair: torch.Tensor, side: torch.Tensor, beta: float
) -> PreferenceTerms:
    """``logp``, ``ref_logp``: [sequences] summed log-probs of each sequence's own tokens (policy, reference);
    ``pair``: [sequences] pair id; ``side``: [sequences] +1 for the chosen episode's sequences, -1 for the
    rejected one's. Every pair in ``pair`` must have both sides."""
    pairs, local = torch.unique(pair, return_inverse=True)
    # h per pair: (pi_c - ref_c) - (pi_r - ref_r), summed over each side's sequences.
    h = torch.zeros(len(pairs), dtype=torch.float64).index_add_(0, local, (side * (logp - ref_logp)).double())
    counts = torch.bincount(local, minlength=len(pairs))
    chosen = torch.zeros(len(pairs), dtype=torch.long).index_add_(0, local, (side > 0).long())
    if bool(((chosen == 0) | (chosen == counts)).any()):
        raise ValueError("every pair needs sequences of both its chosen and its rejected episode in the batch")
    pair_loss = F.softplus(-beta * h)  # = -log sigmoid(beta * h)
    weight = (beta * torch.sigmoid(-beta * h))[local] * side.double() / len(pairs)
    offset = pair_loss[local] / counts[local] / len(pairs) + weight * logp.double()
    return PreferenceTerms(
        weight.to(logp.dtype),
        offset.to(logp.dtype),
        float((beta * h).mean()),
        float((h > 0).double().mean()),
    )
