"""The task sampler: the one owner of every change to the sampling pool.

Order, applied to every draw:
1. the offline keep-list (``data_filter=pass_rate``) restricts the task set, and tasks that cannot
   run here (their image does not build) leave it for the whole run;
2. parked tasks (``data_filter=periodic_pass_rate``: mastered or untouchable for now) are left out;
3. a difficulty level is drawn with the stage's weights, then a task uniformly within that level.
   When a level's bucket is empty (none of its tasks survived 1-2), its weight is shared among the
   other levels of the stage in proportion to their weights; when all of the stage's levels are
   empty, the draw falls back to the whole remaining pool. A stage with no difficulty weights draws
   uniformly over the remaining pool.

Draws are a pure function of (seed, draw number, stage, pool), so a resumed run that restores the
state draws exactly what an uninterrupted run would have.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class TaskSampler:
    # task id -> difficulty, for every task of the (train) task set
    difficulties: Mapping[str, str]
    seed: int
    keep: frozenset[str] | None = None
    # Tasks whose image does not build here: out of the pool for good (re-read, not checkpointed).
    unavailable: frozenset[str] = frozenset()
    parked: set[str] = field(default_factory=set)
    draws: int = 0

    def pool(self) -> list[str]:
        ids = sorted(self.difficulties)
        if self.keep is not None:
            ids = [t for t in ids if t in self.keep]
        return [t for t in ids if t not in self.parked and t not in self.unavailable]

    def draw(self, mix: Mapping[str, float]) -> str:
        """The next task id under difficulty ``mix`` (see the module docstring for the rules)."""
        rng = random.Random(f"{self.seed}/{self.draws}")
        self.draws += 1
        pool = self.pool()
        if not pool:
            raise RuntimeError("the sampling pool is empty: every task was filtered out or parked")
        buckets: dict[str, list[str]] = {}
        for task in pool:
            buckets.setdefault(self.difficulties[task], []).append(task)
        weights = {d: w for d, w in mix.items() if w > 0 and buckets.get(d)}
        if not weights:
            return rng.choice(pool)
        levels = sorted(weights)
        level = rng.choices(levels, weights=[weights[d] for d in levels])[0]
        return rng.choice(buckets[level])

    def draw_batch(self, mix: Mapping[str, float], size: int) -> list[str]:
        return [self.draw(mix) for _ in range(size)]

    def state(self) -> dict:
        return {"draws": self.draws, "parked": sorted(self.parked)}

    def restore(self, state: Mapping) -> None:
        self.draws = int(state["draws"])
        self.parked = set(state["parked"])


def bucket_sizes(difficulties: Mapping[str, str], ids: Sequence[str]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for task in ids:
        sizes[difficulties[task]] = sizes.get(difficulties[task], 0) + 1
    return sizes
