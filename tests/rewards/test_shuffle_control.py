"""The control's shuffle: rewards move only within their group, every group keeps its multiset of
rewards, the order is the same on a rerun, and over many groups every permutation (the identity
included) shows up about equally often."""

from collections import Counter

import pytest

from terminal_rl.rewards.shuffle_control import shuffle_within_groups


def test_rewards_stay_in_their_group_and_keep_their_values():
    scores = [1.0, 0.0, 0.3, 0.7, 0.1, 0.9]
    groups = ["a", "b", "a", "b", "a", "b"]
    shuffled = shuffle_within_groups(scores, groups)
    for group in "ab":
        rows = [r for r, g in enumerate(groups) if g == group]
        assert sorted(shuffled[r] for r in rows) == sorted(scores[r] for r in rows)
    assert shuffle_within_groups(scores, groups) == shuffled
    assert shuffle_within_groups([0.5], ["solo"]) == [0.5]


def test_every_permutation_of_a_group_of_three_is_about_equally_likely():
    counts = Counter(tuple(shuffle_within_groups([0.0, 1.0, 2.0], [f"g{i}"] * 3)) for i in range(6000))
    assert len(counts) == 6  # the identity and both derangements included
    assert all(abs(n / 6000 - 1 / 6) < 0.025 for n in counts.values()), counts
    pairs = Counter(tuple(shuffle_within_groups([0.0, 1.0], [f"p{i}"] * 2)) for i in range(4000))
    assert abs(pairs[(0.0, 1.0)] / 4000 - 0.5) < 0.04  # a pair keeps its order half the time


def test_scores_and_groups_must_pair_up():
    with pytest.raises(ValueError, match="3 scores for 2 group ids"):
        shuffle_within_groups([1.0, 0.0, 1.0], ["a", "a"])
