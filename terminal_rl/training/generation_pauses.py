"""When the run's model calls were paused (async mode: from the trainer's abort of the rollout servers
before an update until generation resumes on the new weights), so that an episode's wall-clock budget
and its group's barrier leave out the time an episode spent waiting for generation to resume: a
pause is the trainer's time, not the episode's, and counting it would turn pauses into timeouts and
masked groups. Times are wall-clock seconds (``time.time()``, comparable across the nodes' processes).
One per run, as a named Ray actor (``terminal_rl.integrations.verl.services``).
"""

from __future__ import annotations


class GenerationPauses:
    def __init__(self) -> None:
        self._spans: list[list[float | None]] = []

    def pause(self, at: float) -> None:
        if not self._spans or self._spans[-1][1] is not None:
            self._spans.append([at, None])

    def resume(self, at: float) -> None:
        if self._spans and self._spans[-1][1] is None:
            self._spans[-1][1] = at

    def paused_between(self, start: float, end: float) -> float:
        """Seconds of [start, end] during which generation was paused (a pause still open runs to ``end``)."""
        total = 0.0
        for began, ended in self._spans:
            total += max(0.0, min(end, end if ended is None else ended) - max(start, began))
        return total
