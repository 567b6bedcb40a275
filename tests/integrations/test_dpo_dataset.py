"""The DPO pair sampler in milliseconds: whole pairs per batch, as many pairs on every data-parallel
rank, the ranks' pairs disjoint and together the step's."""

from __future__ import annotations

import pytest

from terminal_rl.integrations.verl.dpo_dataset import PairBatchSampler

# Six pairs of per-turn episodes: sequences per pair vary (2 to 5).
PAIR = [0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 4, 4, 4, 5, 5]


def test_each_rank_gets_whole_pairs_as_many_as_the_others():
    ranks = [PairBatchSampler(PAIR, 4, rank, 2, seed=3) for rank in range(2)]
    for sampler in ranks:
        sampler.set_epoch(1)
    assert [len(s) for s in ranks] == [1, 1], "6 pairs, 4 a step: one step, the rest dropped"
    [first], [second] = (list(s) for s in ranks)
    pairs = [{PAIR[i] for i in batch} for batch in (first, second)]
    assert len(pairs[0]) == len(pairs[1]) == 2 and not pairs[0] & pairs[1]
    for batch, chosen in zip((first, second), pairs):
        assert sorted(batch) == sorted(i for i, p in enumerate(PAIR) if p in chosen), "every sequence of a pair"
    again = PairBatchSampler(PAIR, 4, 0, 2, seed=3)
    again.set_epoch(1)
    assert list(again) == [first], "the order depends on the seed and the epoch only"


def test_a_step_that_the_ranks_cannot_share_or_the_pairs_cannot_fill_is_refused():
    with pytest.raises(ValueError, match="must divide by the 4 ranks"):
        PairBatchSampler(PAIR, 6, 0, 4)
    with pytest.raises(ValueError, match="6 DPO pairs are fewer than data.train_batch_size=8"):
        PairBatchSampler(PAIR, 8, 0, 1)
