"""``periodic_pass_rate``: per-task pass rates re-estimated from the training rollouts themselves (no
extra inference). A task the policy has mastered, or cannot touch at all, leaves the sampling pool
for a while and is re-admitted later, when its estimate may have changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class PassRateTracker:
    # Samples a task needs before it can be parked; rates from the last `window` samples.
    min_samples: int
    window: int
    # Park when the mean test score is >= mastered or <= untouchable (0.0 = never any credit).
    mastered: float
    untouchable: float
    # Steps a parked task stays out before it is re-admitted.
    park_steps: int
    history: dict[str, list[float]] = field(default_factory=dict)
    parked_until: dict[str, int] = field(default_factory=dict)
    step: int = 0

    @classmethod
    def from_config(cls, node: Mapping) -> PassRateTracker:
        return cls(
            int(node["min_samples"]),
            int(node["window"]),
            float(node["mastered"]),
            float(node["untouchable"]),
            int(node["park_steps"]),
        )

    def update(self, samples: Sequence[tuple[str, float]]) -> set[str]:
        """Add one step's (task id, test score) samples; returns the tasks parked from now on."""
        self.step += 1
        for task, score in samples:
            self.history.setdefault(task, []).append(score)
            self.history[task] = self.history[task][-self.window :]
        for task, until in list(self.parked_until.items()):
            if until <= self.step:  # re-admitted with a fresh estimate
                del self.parked_until[task]
                self.history.pop(task, None)
        for task, scores in self.history.items():
            if task in self.parked_until or len(scores) < self.min_samples:
                continue
            mean = sum(scores) / len(scores)
            if mean >= self.mastered or mean <= self.untouchable:
                self.parked_until[task] = self.step + self.park_steps
        return set(self.parked_until)

    def state(self) -> dict:
        return {"history": self.history, "parked_until": self.parked_until, "step": self.step}

    def restore(self, state: Mapping) -> None:
        self.history = {k: list(v) for k, v in state["history"].items()}
        self.parked_until = {k: int(v) for k, v in state["parked_until"].items()}
        self.step = int(state["step"])
