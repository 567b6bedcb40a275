"""The run's ledger of the training groups its rollout workers scored, shared by every rollout worker
(as a named Ray actor, ``terminal_rl.integrations.verl.services``), so decisions that span workers are
made once for the whole step:

* ``claim_refill``: online-variance filtering may drop and refill at most ``max_refills`` groups per
  training step across all workers (a per-worker count would allow ``max_refills`` x workers). A claim
  counts against the step whose sampling evicts the group: verl evicts a dropped group while a step
  samples, so in async mode one scored after step s had its batch (while step s trains) counts for
  s + 1 (a group scored between verl's last poll and the trainer's ``on_sample_end`` still counts for
  s: a step may evict a few more);
* ``record`` / ``take_consumed``: every scored training group, *before* any filtering evicts it, keyed
  by its group id, so the curriculum's advancement gate and the periodic pass-rate tracker see each
  group once, in the step that consumed it (trained on it or evicted it), not the (upward-biased)
  groups that survived the filter. In async mode a group issued at one step is often consumed at a
  later one: the step number a prompt was issued at does not say which step consumed it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass


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
        self.step = 0
        self._refills: Counter[int] = Counter()
        self._groups: dict[str, GroupRecord] = {}

    def refills_count_for(self, step: int) -> None:
        """Refills claimed from here on count against ``step``: the next step to sample (set when a step
        begins and, in async mode, when a step has its batch)."""
        self.step = step

    def claim_refill(self) -> bool:
        """Whether one more group may be dropped and refilled in the current step (claims it if so)."""
        if self._refills[self.step] >= self.max_refills:
            return False
        self._refills[self.step] += 1
        return True

    def record(self, group_id: str, group: GroupRecord) -> None:
        """A scored group; a group id recorded again (its prompt reissued after a resume) replaces it."""
        self._groups[group_id] = group

    def take_consumed(self, live_group_ids: set[str]) -> list[GroupRecord]:
        """The groups no longer waiting to be trained (every recorded group id not in ``live_group_ids``,
        the prompts the trainer still holds), in the order they were scored; forgets them."""
        consumed = [group_id for group_id in self._groups if group_id not in live_group_ids]
        return [self._groups.pop(group_id) for group_id in consumed]

    def state(self) -> dict:
        """The groups scored and not yet consumed, for the checkpoint: async mode restores such groups
        from TransferQueue's checkpoint and trains them after a resume."""
        return {group_id: asdict(group) for group_id, group in self._groups.items()}

    def restore(self, state: dict) -> None:
        """The checkpoint's groups, in place of anything recorded before (a killed attempt's)."""
        self._groups = {group_id: GroupRecord(**group) for group_id, group in state.items()}
