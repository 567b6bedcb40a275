"""The forged-fixture guard on the RL reward: an episode that passes its tests by rewriting what they
compare against (seed 002: ~18% of "chosen" samples forged their fixtures; RL finds such holes on its
own) is not paid for it.

The rule, on the facts the verifier records (``VerificationResult``: the container's diff, the start
files the episode rewrote, the files the tests' Python processes read) and the datasets' rule (b)
(``terminal_rl/datasets/forged.py``): an episode is flagged when a file the tests read, provided by
the image or the task's start files, was rewritten or deleted by the episode, and the task's
reference solution does not change it (its changes measured once per task version, and only for a
task with an episode that rewrote an input its tests read: ``terminal_rl/agent/reference.py``;
unknown when the task has none or it does not pass).

``fixture_guard`` (conf/train.yaml): ``off``; ``flag`` (counted, reward unchanged); ``zero`` (the
flagged episode's test rewards are 0 where the reference's changes are known, and only flagged
elsewhere: without them an intended edit of a file the tests read, such as a config fix, looks the
same as a forged one).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class FixtureGuard(StrEnum):
    OFF = "off"
    FLAG = "flag"
    ZERO = "zero"

    @classmethod
    def of(cls, value) -> FixtureGuard:
        """The configured mode (YAML reads a bare ``off`` as false); a clear error for anything else."""
        if value is False:
            return cls.OFF
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"fixture_guard={value!r} is not one of {[mode.value for mode in cls]}") from None


def rewritten_inputs(verification: dict) -> set[str]:
    """Files the image or the start files provided that the episode rewrote or deleted."""
    diff = verification.get("changes", {})
    return {p for p, kind in diff.items() if kind in ("modified", "deleted")} | set(
        verification.get("start_files_changed", [])
    )


def forged_inputs(verification: dict, reference_changes: Iterable[str] | None) -> list[str]:
    """The files that flag the episode (empty: not flagged); ``reference_changes``: what the
    reference solution changes, or None when unknown."""
    reads = set(verification.get("reads", []))
    return sorted(reads & rewritten_inputs(verification) - set(reference_changes or ()))


def verdict(verification: dict, guard: FixtureGuard) -> tuple[list[str], bool]:
    """(the files that flag the episode, empty when it is not flagged; whether its test rewards are
    zeroed: zero mode, with the reference's changes known)."""
    if guard is FixtureGuard.OFF:
        return [], False
    reference = verification.get("reference_changes")
    forged = forged_inputs(verification, reference)
    return forged, bool(forged) and guard is FixtureGuard.ZERO and reference is not None
