"""The learning proof's control: each group's rewards in a uniform random order (pure).

Shuffling keeps every group's reward distribution, so the advantages keep their scale, but cuts the
link between a response and its reward: a pipeline whose gains come from the reward signal should
not improve under it. The permutation is uniform over all orders, the identity included (a
derangement of a group of two would swap the rewards, flipping the signal instead of removing it).
It is seeded by the group's id (verl's uid, a fresh uuid4 for each prompt of each step), so groups
are shuffled independently of each other and of any global random state.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence


def shuffle_within_groups(scores: Sequence[float], groups: Sequence[str]) -> list[float]:
    """``scores`` with each group's values permuted among that group's rows (row order kept)."""
    if len(scores) != len(groups):
        raise ValueError(f"{len(scores)} scores for {len(groups)} group ids")
    rows: dict[str, list[int]] = defaultdict(list)
    for row, group in enumerate(groups):
        rows[str(group)].append(row)
    shuffled = list(scores)
    for group, members in rows.items():
        values = [scores[row] for row in members]
        random.Random(f"shuffle-control/{group}").shuffle(values)
        for row, value in zip(members, values):
            shuffled[row] = value
    return shuffled
