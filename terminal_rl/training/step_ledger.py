"""The run's ledger of what each training step's rollout groups scored, shared by every rollout worker
(as a named Ray actor, ``terminal_rl.integrations.verl.services``), so decisions that span workers are
made once for the whole step:

* ``claim_refill``: online-variance filtering may drop and refill at most ``max_refills`` groups per
  step across all workers (a per-worker count would allow ``max_refills`` x workers);
* ``record`` / ``take``: every scored training group, *before* any filtering evicts it, so the
  curriculum's advancement gate and the periodic pass-rate tracker see the step as it was sampled,
  not the (upward-biased) groups that survived the filter.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass


@dataclass(frozen=True)
class GroupRecord:
    """One scored GRPO group of a training step."""

    task_id: str
    # The curriculum stage the group's task was drawn in.
    stage: int
    test_scores: list[float]
    masked: bool
    filtered: bool


class StepLedger:
    def __init__(self, max_refills: int):
        self.max_refills = max_refills
        self._refills: Counter[int] = Counter()
        self._groups: dict[int, list[GroupRecord]] = defaultdict(list)

    def claim_refill(self, step: int) -> bool:
        """Whether one more group of ``step`` may be dropped and refilled (claims it if so)."""
        if self._refills[step] >= self.max_refills:
            return False
        self._refills[step] += 1
        return True

    def refills(self, step: int) -> int:
        return self._refills[step]

    def record(self, step: int, group: GroupRecord) -> None:
        self._groups[step].append(group)

    def take(self, step: int) -> list[GroupRecord]:
        """Every group recorded for ``step`` (and forget them, and earlier steps' leftovers)."""
        groups = self._groups.pop(step, [])
        for stale in [s for s in self._groups if s < step]:
            del self._groups[stale]
        return groups
